import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// The sync server's query connections through PgBouncer in transaction mode
/// (`RECORDKEEPER_TEST_PGBOUNCER`: 4 server connections per database), where consecutive
/// transactions of one client connection run on different server sessions: nothing may rely on
/// session state (no session SET, advisory session lock, temporary table, LISTEN, or named
/// prepared statement; statements are unnamed, sent with PQsendQueryParams).
@Suite(.enabled(if: TestPostgres.pgbouncerEnabled, TestPostgres.pgbouncerDisabledReason), .timeLimit(.minutes(5)))
struct PostgresThroughPgBouncerTests {
    @Test func `pushes, pulls, conflicts and concurrent pushers of different spaces keep their guarantees`() async throws {
        let pooled = try TestPostgres.requirePgBouncer()
        // More client connections than the pooler has server connections: they share them.
        let server = try await PostgresSyncServer.connect(pooled, connections: 8)
        let spaces = (0..<8).map { _ in TestPostgres.space("pgbouncer") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, space) in spaces.enumerated() {
                group.addTask { try await checkSpaceGuarantees(of: server, space: space, device: "device-\(index)") }
            }
            try await group.waitForAll()
        }
        // The same answers as a direct connection gives.
        let direct = try await TestPostgres.server()
        for space in spaces {
            #expect(try await direct.snapshot(space: space) == (try await server.snapshot(space: space)))
        }
    }

    @Test func `eight client connections share the pooler's four server sessions`() async throws {
        let pooled = try TestPostgres.requirePgBouncer()
        // What makes the test above a test of session state: each client connection's
        // statements run on whichever of the 4 server sessions is free.
        var connections: [PostgresConnection] = []
        for _ in 0..<8 { connections.append(try await PostgresConnection(conninfo: pooled)) }
        var seen: Set<Int64> = []
        for _ in 0..<3 {
            for connection in connections {
                seen.insert(try await connection.execute("SELECT pg_backend_pid()::bigint").int64(0, 0))
            }
        }
        #expect(seen.count <= 4, "\(seen.count) backends for 8 client connections: is the pooler in transaction mode?")
    }
}
