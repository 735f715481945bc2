import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// What the PostgreSQL tests add to ``TestPostgres`` (its detection, connection and private
/// schemas are shared by every test target).
extension TestPostgres {
    /// How long a test server's push or pull may take unless the test says otherwise: longer
    /// than the production default, because tests hold pushes at gates (a counter lock held
    /// while the test starts processes and waits on a busy machine) and a deadline that passed
    /// while a gate was closed would fail the test for the machine's load, not for a defect.
    /// Tests of the deadline itself pass their own `timeout`.
    static let generousTimeout: Duration = .seconds(300)

    static func server(
        connections: Int = 1, hooks: PostgresSyncServer.Hooks = .init(),
        timeout: Duration = generousTimeout
    ) async throws -> PostgresSyncServer {
        var opened: [PostgresConnection] = []
        for _ in 0..<connections { opened.append(try await connection()) }
        return try await PostgresSyncServer(connections: opened, hooks: hooks, timeout: timeout)
    }

    /// Returns once the backend `pid` waits for a lock (`waiting`), or once it waits for none
    /// (`!waiting`), as `monitor` sees it in `pg_locks`; fails after `waitUntil`'s limit.
    static func waitUntil(backend pid: Int32, waitsForLock waiting: Bool, monitor: PostgresConnection) async throws {
        try await TestHelpers.waitUntil("backend \(pid) \(waiting ? "waits" : "waits for no lock")") {
            (try await monitor.transaction(operation: "watch locks") { connection in
                try connection.execute(
                    "SELECT count(*) FROM pg_locks WHERE pid = $1 AND NOT granted", [.int64(Int64(pid))]
                ).int64(0, 0)
            } > 0) == waiting
        }
    }

    /// Runs `body` with connections whose search_path is a fresh schema, and its name (see
    /// ``TestPostgres/withPrivateSchema(prefix:_:)``), dropped afterwards.
    static func withPrivateConnections(
        _ body: (_ connect: () async throws -> PostgresConnection, _ name: String) async throws -> Void
    ) async throws {
        try await withPrivateSchema { conninfo, name in
            try await body({ try await PostgresConnection(conninfo: conninfo) }, name)
        }
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
        try await make(clock: nil, sourceLocation: sourceLocation)
    }

    /// The same, a server that compacts, measuring ages with `clock` (the system's when nil).
    func make(clock: ManualClock?, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> (any SyncCompactingServer)?
    {
        var now: (@Sendable () -> Date)?
        if let clock { now = { clock.now() } }
        switch self {
        case .inMemory:
            if let now { return InMemorySyncServer(now: now) }
            return InMemorySyncServer()
        case .postgres:
            guard TestPostgres.enabled else {
                try skipCase(rawValue, TestPostgres.disabledReason, sourceLocation: sourceLocation)
                return nil
            }
            return try await TestPostgres.server(hooks: .init(now: now))
        }
    }

    /// A new server whose pulls read `pullByteBudget` payload bytes at most (paging by size
    /// with small records), that reads several pages at once; nil as ``make(sourceLocation:)``.
    func make(pullByteBudget: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> (any SyncPagesPulling)?
    {
        switch self {
        case .inMemory:
            return InMemorySyncServer(pullByteBudget: pullByteBudget)
        case .postgres:
            guard TestPostgres.enabled else {
                try skipCase(rawValue, TestPostgres.disabledReason, sourceLocation: sourceLocation)
                return nil
            }
            return try await TestPostgres.server(hooks: .init(pullByteBudget: pullByteBudget))
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

/// An operation with a checked chain: it follows `previous` (nil: the device's first).
func operation(_ device: String, _ sequence: Int64, after previous: SyncOperation?, _ changes: SyncChange...)
    -> SyncOperation
{
    SyncOperation(
        device: device, sequence: sequence, predecessor: previous.map { .operation($0.id) } ?? .firstOfDevice,
        changes: changes)
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
