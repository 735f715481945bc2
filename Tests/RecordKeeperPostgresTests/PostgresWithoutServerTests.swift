import Foundation
import RecordKeeper
@testable import RecordKeeperPostgres
import TestHelpers
import Testing

/// Connections that cannot be made fail clearly: libpq's words for a conninfo it cannot read
/// (a configuration error), and "unreachable" for a server that does not answer. None of this
/// needs a server, so it runs in every run, PostgreSQL or not.
@Suite struct PostgresWithoutServerTests {
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
        #expect(malformed?.kind == .configuration, "a setting to correct, not a server to wait for")
    }

    @Test func `a connection string libpq cannot read fails with libpq's own words, less what it quotes`() async throws {
        let error = await #expect(throws: PostgresError.self) {
            _ = try await PostgresConnection(conninfo: "hots=127.0.0.1")
        }
        #expect(error?.kind == .configuration)
        // The piece libpq quotes is left out: in other messages it can be part of a password.
        #expect(error?.message.hasPrefix(#"invalid connection option "…""#) == true, "\(String(describing: error))")
    }

    @Test func `an unreachable server is reported as unreachable`() async throws {
        let error = await #expect(throws: SyncError.self) {
            try await PostgresSyncServer.connect("host=127.0.0.1 port=\(ClosedPort.shared().port) connect_timeout=5 dbname=postgres")
        }
        #expect(error?.code == .unreachable)
        #expect((error?.underlying as? PostgresError)?.kind == .connection)
    }

    @Test func `a server that does not answer is still unreachable`() async throws {
        func connectError(_ conninfo: String) async -> SyncError? {
            await #expect(throws: SyncError.self) { _ = try await PostgresSyncServer.connect(conninfo) }
        }
        let port = try ClosedPort.shared().port
        let closedPort = await connectError("host=127.0.0.1 port=\(port) connect_timeout=5")
        #expect(closedPort?.code == .unreachable)
        let unknownHost = await connectError("host=recordkeeper-no-such-host.invalid connect_timeout=5")
        #expect(unknownHost?.code == .unreachable, "\(String(describing: unknownHost))")
    }
}
