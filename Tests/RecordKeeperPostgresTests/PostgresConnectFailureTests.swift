import Foundation
import RecordKeeper
@testable import RecordKeeperPostgres
import RecordKeeperTestSupport
import Testing

/// Connections that cannot be made fail clearly with libpq's words, and the sync server calls
/// that unreachable. None of this needs a server, so it runs in every run.
@Suite struct PostgresConnectFailureTests {
    @Test func `a connection that cannot be made says so with libpq's message`() async throws {
        let error = await #expect(throws: PostgresError.self) {
            try await PostgresConnection(conninfo: "host=127.0.0.1 port=\(ClosedPort.shared().port) connect_timeout=5")
        }
        #expect(error?.kind == .connection)
        #expect(error?.isConnectionFailure == true)
        #expect(error?.message.isEmpty == false)
        let malformed = await #expect(throws: PostgresError.self) {
            try await PostgresConnection(conninfo: "this is not = a conninfo ==")
        }
        #expect(malformed?.kind == .connection)
    }

    @Test func `a connection string libpq cannot read fails with libpq's own words`() async throws {
        let error = await #expect(throws: PostgresError.self) {
            _ = try await PostgresConnection(conninfo: "hots=127.0.0.1")
        }
        #expect(error?.kind == .connection)
        #expect(error?.message.contains("hots") == true)
    }

    @Test func `an unreachable server is reported as unreachable`() async throws {
        let error = await #expect(throws: SyncError.self) {
            try await PostgresSyncServer.connect("host=127.0.0.1 port=\(ClosedPort.shared().port) connect_timeout=5 dbname=postgres")
        }
        #expect(error?.code == .unreachable)
        #expect((error?.underlying as? PostgresError)?.kind == .connection)
    }
}
