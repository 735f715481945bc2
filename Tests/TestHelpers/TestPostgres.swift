// The PostgreSQL test server exists where RecordKeeperPostgres builds (macOS and Linux): the
// device-side test targets, which also build for iOS, never use it.
#if canImport(RecordKeeperPostgres)
import Foundation
public import RecordKeeperPostgres
public import Testing

/// The PostgreSQL server tests use: `RECORDKEEPER_TEST_POSTGRES` (a libpq conninfo), set by
/// `scripts/with-postgres.sh`. Without it, locally, tests that need it are skipped with
/// ``disabledReason`` (suites and tests through `.enabled(if: TestPostgres.enabled, …)`,
/// parameterized cases through a printed skip); in CI (`CI` set to a true value, as `.ci/run`
/// does) they run and fail, so a missing server is never a silent pass.
public enum TestPostgres {
    /// The conninfo, when one is configured (an empty value counts as none).
    public static let conninfo: String? = {
        let value = ProcessInfo.processInfo.environment["RECORDKEEPER_TEST_POSTGRES"]
        return value?.isEmpty == false ? value : nil
    }()

    /// Whether this run is CI: `CI` is set to `true`, `1`, `yes` or `on` (any case), as CI
    /// services and `.ci/run` set it.
    public static let isCI = isTrue(ProcessInfo.processInfo.environment["CI"])

    /// Whether `value` is one of the usual spellings of "true" in an environment variable.
    public static func isTrue(_ value: String?) -> Bool {
        guard let value else { return false }
        return ["1", "true", "yes", "on"].contains(value.trimmingCharacters(in: .whitespaces).lowercased())
    }

    /// Whether the PostgreSQL tests run: a server is configured, or this is CI.
    public static let enabled = conninfo != nil || isCI

    /// Why they are skipped when they are.
    public static let disabledReason: Comment =
        "RECORDKEEPER_TEST_POSTGRES is not set: run under scripts/with-postgres.sh (with CI=true or CI=1 these tests fail instead)"

    /// The failure of a PostgreSQL test in CI without a server.
    public struct Missing: Error, CustomStringConvertible {
        public init() {}
        public var description: String {
            "CI is set but RECORDKEEPER_TEST_POSTGRES is not: the PostgreSQL tests need a server (.ci/run starts one with scripts/with-postgres.sh)"
        }
    }

    /// The conninfo, or ``Missing`` when there is none.
    public static func requireConninfo() throws -> String {
        guard let conninfo else { throw Missing() }
        return conninfo
    }

    /// A new connection to the test server.
    public static func connection() async throws -> PostgresConnection {
        try await PostgresConnection(conninfo: requireConninfo())
    }

    /// Runs `body` with a conninfo whose `search_path` is a fresh PostgreSQL schema (named
    /// `<prefix>_<uuid>`, also passed to `body`), so whatever creates the sync tables creates
    /// them there and sees only this test's server data. The schema is dropped afterwards, also
    /// when `body` throws.
    public static func withPrivateSchema<T>(
        prefix: String = "rk", _ body: (_ conninfo: String, _ schema: String) async throws -> T
    ) async throws -> T {
        try await withPrivateSchema(on: try requireConninfo(), prefix: prefix, body)
    }

    /// The same on the server `base` names (``secondConninfo``, for sharding tests).
    public static func withPrivateSchema<T>(
        on base: String, prefix: String = "rk", _ body: (_ conninfo: String, _ schema: String) async throws -> T
    ) async throws -> T {
        let name = prefix + "_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
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
        let result: T
        do {
            result = try await body(base + " options='-c search_path=\(name)'", name)
        } catch {
            try await schema(drop: true)
            throw error
        }
        try await schema(drop: true)
        return result
    }
}
#endif
