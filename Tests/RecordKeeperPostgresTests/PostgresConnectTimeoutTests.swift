import Foundation
@testable import RecordKeeperPostgres
import TestHelpers
import Testing

/// Connecting gives up after a bounded time unless the connection string says otherwise, so an
/// unreachable server is reported in seconds, not after the operating system's TCP timeout.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
struct PostgresConnectTimeoutTests {
    /// `PGCONNECT_TIMEOUT`, which wins over the library's default when it is set.
    private let environmentTimeout = ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"]

    @Test func `a connection string without connect_timeout connects with the default`() async throws {
        let conninfo = try TestPostgres.requireConninfo()
        try #require(!conninfo.contains("connect_timeout"), "the test server's conninfo sets its own timeout")
        let connection = try await PostgresConnection(conninfo: conninfo)
        let expected = environmentTimeout ?? String(PostgresConnection.defaultConnectTimeoutSeconds)
        #expect(await connection.settings()["connect_timeout"] == expected)
    }

    @Test func `a connection string's own connect_timeout is kept, as keywords and as a URI`() async throws {
        let conninfo = try TestPostgres.requireConninfo()
        let keywords = try await PostgresConnection(conninfo: conninfo + " connect_timeout=3")
        #expect(await keywords.settings()["connect_timeout"] == "3")

        let used = await keywords.settings()
        let host = try #require(used["host"])
        let port = try #require(used["port"])
        let user = try #require(used["user"])
        let database = try #require(used["dbname"])
        let uri = "postgresql://\(user)@\(host):\(port)/\(database)?connect_timeout=4"
        let fromURI = try await PostgresConnection(conninfo: uri)
        #expect(await fromURI.settings()["connect_timeout"] == "4")
    }
}
