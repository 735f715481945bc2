import Foundation
import RecordKeeperPostgres
import Testing

/// The PostgreSQL server the tool's sync tests use: `RECORDKEEPER_TEST_POSTGRES`, set by
/// `scripts/with-postgres.sh` (as in RecordKeeperPostgresTests). Locally without it the suite
/// is disabled, with the reason; in CI (`CI=true`) it runs and fails.
enum ToolPostgres {
    static let conninfo: String? = {
        let value = ProcessInfo.processInfo.environment["RECORDKEEPER_TEST_POSTGRES"]
        return value?.isEmpty == false ? value : nil
    }()

    static let enabled = conninfo != nil || ProcessInfo.processInfo.environment["CI"] == "true"

    static let disabledReason: Comment =
        "RECORDKEEPER_TEST_POSTGRES is not set: run under scripts/with-postgres.sh (in CI these tests fail instead)"

    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "CI=true but RECORDKEEPER_TEST_POSTGRES is not set: the tool's sync tests need a server"
        }
    }

    /// A conninfo loopback port 1, where nothing listens: connecting fails at once.
    static let unreachable = "host=127.0.0.1 port=1 connect_timeout=2 dbname=postgres"

    /// Runs `body` with a conninfo whose `search_path` is a fresh PostgreSQL schema (the tool
    /// creates the sync tables there), dropped afterwards: the tool's runs see only this test's
    /// server data.
    static func withPrivateSchema(_ body: (_ conninfo: String) async throws -> Void) async throws {
        guard let base = conninfo else { throw Missing() }
        let name = "rk_tool_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try await PostgresConnection(conninfo: base)
        func schema(drop: Bool) async throws {
            try await admin.transaction { connection in
                // Schema names are identifiers, not values: format('%I') quotes the parameter.
                try connection.execute(
                    """
                    CREATE OR REPLACE FUNCTION pg_temp.rk_schema(name text, drop boolean) RETURNS void
                    LANGUAGE plpgsql AS $$
                    BEGIN
                        IF drop THEN EXECUTE format('DROP SCHEMA %I CASCADE', name);
                        ELSE EXECUTE format('CREATE SCHEMA %I', name);
                        END IF;
                    END $$
                    """)
                _ = try connection.execute("SELECT pg_temp.rk_schema($1, $2)", [.text(name), .bool(drop)])
            }
        }
        try await schema(drop: false)
        do {
            try await body(base + " options='-c search_path=\(name)'")
        } catch {
            try await schema(drop: true)
            throw error
        }
        try await schema(drop: true)
    }
}
