#if canImport(RecordKeeperPostgres)  // as TestPostgres.swift
import Foundation
public import Testing

/// The other servers `scripts/with-postgres.sh` starts: a second PostgreSQL for sharding tests
/// (`RECORDKEEPER_TEST_POSTGRES_2`) and a PgBouncer in transaction mode in front of the first
/// (`RECORDKEEPER_TEST_PGBOUNCER`). Like ``TestPostgres/conninfo``: skipped without them
/// locally, failing without them in CI.
extension TestPostgres {
    /// The second server's conninfo, when one is configured.
    public static let secondConninfo: String? = environment("RECORDKEEPER_TEST_POSTGRES_2")

    /// The PgBouncer's conninfo (transaction pool mode, database `postgres` of the first
    /// server), when one is configured.
    public static let pgbouncerConninfo: String? = environment("RECORDKEEPER_TEST_PGBOUNCER")

    /// Whether the tests that need two servers run.
    public static let twoServersEnabled = (conninfo != nil && secondConninfo != nil) || isCI

    /// Whether the tests through PgBouncer run.
    public static let pgbouncerEnabled = (conninfo != nil && pgbouncerConninfo != nil) || isCI

    /// Why the two-server tests are skipped when they are.
    public static let twoServersDisabledReason: Comment =
        "RECORDKEEPER_TEST_POSTGRES and RECORDKEEPER_TEST_POSTGRES_2 are not both set: run under scripts/with-postgres.sh"

    /// Why the PgBouncer tests are skipped when they are.
    public static let pgbouncerDisabledReason: Comment =
        "RECORDKEEPER_TEST_PGBOUNCER is not set: run under scripts/with-postgres.sh with the Debian package pgbouncer installed"

    /// The failure of a test in CI without the server it needs.
    public struct MissingServer: Error, CustomStringConvertible {
        public let variable: String
        public var description: String {
            "CI is set but \(variable) is not: scripts/with-postgres.sh sets it (.ci/run installs what it needs)"
        }
    }

    /// The second server's conninfo, or ``MissingServer``.
    public static func requireSecondConninfo() throws -> String {
        guard let secondConninfo else { throw MissingServer(variable: "RECORDKEEPER_TEST_POSTGRES_2") }
        return secondConninfo
    }

    /// The PgBouncer's conninfo, or ``MissingServer``.
    public static func requirePgBouncer() throws -> String {
        guard let pgbouncerConninfo else { throw MissingServer(variable: "RECORDKEEPER_TEST_PGBOUNCER") }
        return pgbouncerConninfo
    }

    private static func environment(_ name: String) -> String? {
        let value = ProcessInfo.processInfo.environment[name]
        return value?.isEmpty == false ? value : nil
    }
}
#endif
