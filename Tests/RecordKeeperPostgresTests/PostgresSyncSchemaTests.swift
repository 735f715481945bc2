import Foundation
import RecordKeeper
import RecordKeeperPostgres
import Testing

/// The server schema: created by the library in numbered steps, recorded in
/// `recordkeeper_sync_schema`, idempotent, safe when servers start at once, and never touched
/// when it is newer than the library. Each test works in a private PostgreSQL schema.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
struct PostgresSyncSchemaTests {
    /// Runs `body` with connections whose search_path is a fresh schema, dropped afterwards.
    private func withPrivateSchema(_ body: (_ connect: () async throws -> PostgresConnection, _ name: String) async throws -> Void)
        async throws
    {
        let name = "rk_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try await TestPostgres.connection()
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
        let conninfo = try TestPostgres.requireConninfo() + " options='-c search_path=\(name)'"
        do {
            try await body({ try await PostgresConnection(conninfo: conninfo) }, name)
        } catch {
            try await admin.transaction { _ = try $0.execute("SELECT pg_temp.rk_schema($1, true)", [.text(name)]) }
            throw error
        }
        try await admin.transaction { _ = try $0.execute("SELECT pg_temp.rk_schema($1, true)", [.text(name)]) }
    }

    private func tableCount(_ connection: PostgresConnection, schema: String) async throws -> Int64 {
        try await connection.transaction { connection in
            try connection.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'recordkeeper_sync_%'",
                [.text(schema)]
            ).int64(0, 0)
        }
    }

    @Test func `an empty database is migrated to the current version once`() async throws {
        try await withPrivateSchema { connect, name in
            let connection = try await connect()
            #expect(try await PostgresSyncSchema.version(connection) == 0)
            #expect(try await PostgresSyncSchema.migrate(connection) == [1])
            #expect(try await PostgresSyncSchema.version(connection) == PostgresSyncSchema.currentVersion)
            #expect(try await tableCount(connection, schema: name) == 5)
            #expect(try await PostgresSyncSchema.migrate(connection) == [])
            // A server on it works.
            let server = try await PostgresSyncServer(connection: connection)
            let outcome = try await server.push(space: "s", operations: [operation("d", 1, put("c", "k", "v", base: nil))])
            #expect(outcome.first?.result == .applied(SyncServerVersion(1)))
        }
    }

    @Test func `servers starting at once migrate one after the other`() async throws {
        try await withPrivateSchema { connect, _ in
            let first = try await connect()
            let second = try await connect()
            async let a = PostgresSyncSchema.migrate(first)
            async let b = PostgresSyncSchema.migrate(second)
            let applied = try await [a, b]
            #expect(applied.sorted { $0.count < $1.count } == [[], [1]])
        }
    }

    @Test func `a newer schema is refused and left untouched`() async throws {
        try await withPrivateSchema { connect, name in
            let connection = try await connect()
            try await PostgresSyncSchema.migrate(connection)
            try await connection.transaction { connection in
                _ = try connection.execute(
                    "INSERT INTO recordkeeper_sync_schema (version, name) VALUES ($1, $2)",
                    [.int64(99), .text("from the future")])
            }
            let error = await #expect(throws: SyncError.self) {
                try await PostgresSyncServer(connection: connection)
            }
            #expect(error?.code == .newerServerSchema)
            #expect(error?.message.contains("99") == true)
            #expect(try await PostgresSyncSchema.version(connection) == 99)
            #expect(try await tableCount(connection, schema: name) == 5)
        }
    }
}
