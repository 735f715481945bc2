import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// `recordkeeper-relay serve` as a role with DML rights only, after `migrate --grant` by the
/// owner; and that role's database going away: 503, and the device `.unreachable`.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct RelayServingRoleTests {
    /// Creates, closes (connection limit 0, its sessions ended), opens or drops `role`.
    private static func role(_ role: String, _ action: String) async throws {
        let admin = try await TestPostgres.connection()
        try await admin.transaction { connection in
            // Role names are identifiers: format('%I') quotes the parameter.
            try connection.execute(
                """
                CREATE OR REPLACE FUNCTION pg_temp.rk_role(name text, action text) RETURNS void
                LANGUAGE plpgsql AS $$
                BEGIN
                    IF action = 'create' THEN EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', name);
                    ELSIF action = 'close' THEN
                        EXECUTE format('ALTER ROLE %I CONNECTION LIMIT 0', name);
                        PERFORM pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE usename = name;
                    ELSIF action = 'open' THEN EXECUTE format('ALTER ROLE %I CONNECTION LIMIT -1', name);
                    ELSE EXECUTE format('DROP ROLE %I', name);
                    END IF;
                END $$
                """)
            _ = try connection.execute("SELECT pg_temp.rk_role($1, $2)", [.text(role), .text(action)])
        }
    }

    /// Runs `body` with a new login role (no superuser, no rights of its own), dropped afterwards.
    private func withRole(_ body: (String) async throws -> Void) async throws {
        let name = "rk_serving_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await Self.role(name, "create")
        do {
            try await body(name)
        } catch {
            try await Self.role(name, "drop")
            throw error
        }
        try await Self.role(name, "drop")
    }

    @Test func `migrate renews a serving role's rights on every table, also when no step is applied`() async throws {
        try await withRole { role in
            try await TestPostgres.withPrivateSchema { owner, _ in
                let granted = try await RelayProcess.run(["migrate", "--database", owner, "--grant", role])
                #expect(granted.status == 0, "\(granted.error)")
                // What a database migrated to 6 by an older version left: no rights on the cursors.
                let connection = try await PostgresConnection(conninfo: owner)
                func cursorsGranted() async throws -> Bool {
                    try await connection.transaction { connection in
                        try connection.execute(
                            "SELECT has_table_privilege($1, 'recordkeeper_sync_cursors', 'SELECT, INSERT, UPDATE, DELETE')",
                            [.text(role)]
                        ).bool(0, 0)
                    }
                }
                try await connection.transaction { connection in
                    try connection.execute(
                        """
                        CREATE OR REPLACE FUNCTION pg_temp.rk_revoke(role text) RETURNS void LANGUAGE plpgsql AS $$
                        BEGIN EXECUTE format('REVOKE ALL ON recordkeeper_sync_cursors FROM %I', role); END $$
                        """)
                    _ = try connection.execute("SELECT pg_temp.rk_revoke($1)", [.text(role)])
                }
                #expect(try await cursorsGranted() == false)
                let renewed = try await RelayProcess.run(["migrate", "--database", owner])
                #expect(renewed.status == 0, "\(renewed.error)")
                #expect(renewed.output.contains("nothing to migrate"))
                #expect(renewed.output.contains("renewed what serve needs for \(role)"), "\(renewed.output)")
                #expect(try await cursorsGranted())
            }
        }
    }

    @Test func `a role with DML rights only serves after migrate --grant, and cannot create anything`() async throws {
        try await withRole { role in
            try await withTemporaryDirectory { directory in
                try await withLiveRelay(in: directory, serveConninfo: { owner in
                    let serving = owner + " user=\(role)"
                    // Before the grant the role cannot even read the schema version: a setting to
                    // fix (the tools exit 78), never "try later".
                    let refused = await #expect(throws: SyncError.self) { _ = try await PostgresSyncServer.connect(serving) }
                    #expect(refused?.code == .configuration, "\(String(describing: refused))")
                    #expect(refused?.message.contains("`recordkeeper-relay migrate`") == true, "\(String(describing: refused?.message)) \(String(describing: refused?.underlying))")
                    #expect(refused?.message.contains("--grant ROLE") == true)
                    let granted = try await RelayProcess.run(["migrate", "--database", owner, "--grant", role])
                    #expect(granted.status == 0, "\(granted.error)")
                    #expect(granted.output.contains("granted \(role) what serve needs"))
                    let connection = try await PostgresConnection(conninfo: serving)
                    let rights = try await connection.transaction { connection in
                        let result = try connection.execute(
                            "SELECT has_schema_privilege(current_schema(), 'CREATE'), has_database_privilege(current_database(), 'CREATE')")
                        return [try result.bool(0, 0), try result.bool(0, 1)]
                    }
                    #expect(rights == [false, false], "the role may create nothing")
                    return serving
                }) { relay in
                    let stores = (0..<2).map { RecordStore(url: directory.appendingPathComponent("d\($0).sqlite")) }
                    let syncs = try stores.map { RecordSync(store: $0, server: try relay.client("alice")) }
                    for sync in syncs { try await sync.start(space: "alice", collections: ["notes"]) }
                    try await stores[0].put("notes", key: "today", data: Data("milk".utf8))
                    for sync in syncs { _ = try await sync.sync() }
                    #expect(try await stores[1].read("notes")?["today"] == Data("milk".utf8))
                }
            }
        }
    }

    @Test func `a relay whose database is gone answers 503 and the device is unreachable, until it is back`() async throws {
        try await withRole { role in
            try await withTemporaryDirectory { directory in
                try await withLiveRelay(in: directory, serveConninfo: { owner in
                    let granted = try await RelayProcess.run(["migrate", "--database", owner, "--grant", role])
                    #expect(granted.status == 0, "\(granted.error)")
                    return owner + " user=\(role)"
                }) { relay in
                    let store = RecordStore(url: directory.appendingPathComponent("device.sqlite"))
                    let sync = RecordSync(store: store, server: try relay.client("alice"))
                    try await sync.start(space: "alice", collections: ["notes"])
                    try await store.put("notes", key: "today", data: Data("milk".utf8))
                    try await Self.role(role, "close")

                    let error = await #expect(throws: SyncError.self) { try await sync.sync() }
                    #expect(error?.code == .unreachable, "\(String(describing: error))")
                    #expect(error?.retryAfter == .seconds(1))
                    #expect(try await store.syncStatus()?.pendingOperations == 1)
                    let health = try await request("GET", relay.url.absoluteString + "/v1/health")
                    #expect(health.status == 503)
                    #expect(health.text.contains("the database does not answer"))

                    try await Self.role(role, "open")
                    _ = try await sync.sync()
                    #expect(try await store.syncStatus()?.pendingOperations == 0)
                }
            }
        }
    }
}
