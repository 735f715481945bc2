import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperTestSupport
import Testing

/// What the PostgreSQL tests add to ``TestPostgres`` (its detection, connection and private
/// schemas are shared by every test target).
extension TestPostgres {
    static func server(connections: Int = 1, hooks: PostgresSyncServer.Hooks = .init()) async throws
        -> PostgresSyncServer
    {
        var opened: [PostgresConnection] = []
        for _ in 0..<connections { opened.append(try await connection()) }
        return try await PostgresSyncServer(connections: opened, hooks: hooks)
    }

    /// A space no other test uses, so tests run in parallel on one database.
    static func space(_ label: String = "test") -> String {
        "\(label)-\(UUID().uuidString)"
    }
}

/// The server implementations the protocol tests run against.
enum ServerKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case inMemory
    case postgres

    var testDescription: String { rawValue }

    /// A new server of this kind; nil, with the skip printed (see ``skipCase(_:_:sourceLocation:)``),
    /// for PostgreSQL when it is not enabled (see ``TestPostgres``): tests run with every kind
    /// and return on nil, so a missing server is a visible skip of that case, never a case
    /// silently left out.
    func make(sourceLocation: SourceLocation = #_sourceLocation) async throws -> (any RecordSyncServer)? {
        switch self {
        case .inMemory: return InMemorySyncServer()
        case .postgres:
            guard TestPostgres.enabled else {
                try skipCase(rawValue, TestPostgres.disabledReason, sourceLocation: sourceLocation)
                return nil
            }
            return try await TestPostgres.server()
        }
    }
}

/// Builders for terse tests.
func put(_ collection: String, _ key: String, _ text: String, base: Int64?) -> SyncChange {
    SyncChange(
        collection: collection, key: key, value: .payload(Data(text.utf8)),
        base: base.map(SyncServerVersion.init))
}

func delete(_ collection: String, _ key: String, base: Int64?) -> SyncChange {
    SyncChange(collection: collection, key: key, value: .tombstone, base: base.map(SyncServerVersion.init))
}

func operation(_ device: String, _ sequence: Int64, _ changes: SyncChange...) -> SyncOperation {
    SyncOperation(device: device, sequence: sequence, changes: changes)
}

extension SyncValue {
    static func text(_ text: String) -> SyncValue { .payload(Data(text.utf8)) }
}

extension RecordSyncServer {
    /// Pulls page after page from `cursor` to the end, checking that cursors only advance.
    func pullAll(space: String, after cursor: SyncCursor = .start, limit: Int = 1000) async throws
        -> (changes: [SyncPulledChange], cursor: SyncCursor)
    {
        var cursor = cursor
        var changes: [SyncPulledChange] = []
        while true {
            let page = try await pull(space: space, after: cursor, limit: limit)
            #expect(page.cursor >= cursor, "a cursor moved backwards")
            #expect(page.changes.count <= limit)
            changes += page.changes
            cursor = page.cursor
            if !page.hasMore { return (changes, cursor) }
        }
    }

    /// The space's records as a pull from the start shows them: key "collection/key" -> value.
    func snapshot(space: String) async throws -> [String: SyncValue] {
        var values: [String: SyncValue] = [:]
        for change in try await pullAll(space: space).changes {
            values["\(change.collection)/\(change.key)"] = change.value
        }
        return values
    }
}
