import Foundation
import RecordKeeper
import RecordKeeperPostgres
import Testing

/// The PostgreSQL server the tests use: `RECORDKEEPER_TEST_POSTGRES` (a libpq conninfo), set by
/// `scripts/with-postgres.sh`. Locally without it the PostgreSQL suites are disabled, with the
/// reason; in CI (`CI=true`) they run and fail, so a missing server is never a silent pass.
enum TestPostgres {
    static let conninfo: String? = {
        let value = ProcessInfo.processInfo.environment["RECORDKEEPER_TEST_POSTGRES"]
        return value?.isEmpty == false ? value : nil
    }()

    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// Whether the PostgreSQL tests run: a server is configured, or this is CI.
    static let enabled = conninfo != nil || isCI

    static let disabledReason: Comment =
        "RECORDKEEPER_TEST_POSTGRES is not set: run under scripts/with-postgres.sh (in CI these tests fail instead)"

    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "CI=true but RECORDKEEPER_TEST_POSTGRES is not set: the PostgreSQL tests need a server (.ci/run starts one with scripts/with-postgres.sh)"
        }
    }

    /// The conninfo, or a failure when there is none.
    static func requireConninfo() throws -> String {
        guard let conninfo else { throw Missing() }
        return conninfo
    }

    static func connection() async throws -> PostgresConnection {
        try await PostgresConnection(conninfo: requireConninfo())
    }

    static func server(
        connections: Int = 1, hooks: PostgresSyncServer.Hooks = .init(),
        timeout: Duration = PostgresSyncServer.defaultTimeout
    ) async throws -> PostgresSyncServer {
        var opened: [PostgresConnection] = []
        for _ in 0..<connections { opened.append(try await connection()) }
        return try await PostgresSyncServer(connections: opened, hooks: hooks, timeout: timeout)
    }

    /// Returns once the backend `pid` waits for a lock (`waiting`), or once it waits for none
    /// (`!waiting`), as `monitor` sees it in `pg_locks`.
    static func waitUntil(backend pid: Int32, waitsForLock waiting: Bool, monitor: PostgresConnection) async throws {
        while true {
            let count = try await monitor.transaction(operation: "watch locks") { connection in
                try connection.execute(
                    "SELECT count(*) FROM pg_locks WHERE pid = $1 AND NOT granted", [.int64(Int64(pid))]
                ).int64(0, 0)
            }
            if (count > 0) == waiting { return }
            await Task.yield()
        }
    }

    /// Runs `body` with connections whose search_path is a fresh schema, dropped afterwards.
    static func withPrivateSchema(_ body: (_ connect: () async throws -> PostgresConnection, _ name: String) async throws -> Void)
        async throws
    {
        let name = "rk_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try await connection()
        try await admin.transaction { connection in
            // Schema names are identifiers, not values: format('%I') quotes the parameter.
            try connection.execute(
                """
                CREATE FUNCTION pg_temp.rk_schema(name text, drop boolean) RETURNS void
                LANGUAGE plpgsql AS $$
                BEGIN
                    IF drop THEN EXECUTE format('DROP SCHEMA %I CASCADE', name);
                    ELSE EXECUTE format('CREATE SCHEMA %I', name);
                    END IF;
                END $$
                """)
            _ = try connection.execute("SELECT pg_temp.rk_schema($1, false)", [.text(name)])
        }
        let conninfo = try requireConninfo() + " options='-c search_path=\(name)'"
        do {
            try await body({ try await PostgresConnection(conninfo: conninfo) }, name)
        } catch {
            try await admin.transaction { _ = try $0.execute("SELECT pg_temp.rk_schema($1, true)", [.text(name)]) }
            throw error
        }
        try await admin.transaction { _ = try $0.execute("SELECT pg_temp.rk_schema($1, true)", [.text(name)]) }
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

    /// In-memory always; PostgreSQL when enabled (see ``TestPostgres``).
    static let available: [ServerKind] = TestPostgres.enabled ? [.inMemory, .postgres] : [.inMemory]

    func make() async throws -> any RecordSyncServer {
        switch self {
        case .inMemory: InMemorySyncServer()
        case .postgres: try await TestPostgres.server()
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
