import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// A server's connections whose sessions ended while they sat idle (PostgreSQL restarted, an
/// administrator ended the backends) connect again on their next request, which succeeds: no
/// request fails for it. A push whose session is lost after its COMMIT runs again and is
/// answered as a re-delivery, applied once; a session lost again in that second attempt is
/// reported. Sessions end through `pg_terminate_backend`, from an admin connection (waiting in
/// `pg_stat_activity` until they are gone) or from a hook on the push's own connection; pushes
/// hold a connection at gates (no sleeps).
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(5)))
struct PostgresReconnectTests {
    /// Gates by space: a push of a space with a gate stops before its COMMIT until it opens.
    private typealias Gates = TestHelpers.Protected<[String: BlockingGate]>

    /// A server with `connections` connections whose sessions carry an `application_name` no
    /// other test uses (returned), so that ``endSessions(of:admin:)`` ends exactly those.
    private func openServer(connections: Int, gates: Gates) async throws -> (PostgresSyncServer, application: String) {
        let application = "rk_reconnect_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let conninfo = try TestPostgres.requireConninfo() + " application_name=\(application)"
        var opened: [PostgresConnection] = []
        for _ in 0..<connections { opened.append(try await PostgresConnection(conninfo: conninfo)) }
        let hooks = PostgresSyncServer.Hooks(beforeCommit: { space in gates.withLock { $0[space] }?.arriveAndWait() })
        let server = try await PostgresSyncServer(connections: opened, hooks: hooks, timeout: TestPostgres.generousTimeout)
        return (server, application)
    }

    /// Ends every session of `application` and returns once they are gone (left
    /// `pg_stat_activity`, which a backend does on its way out): their clients, idle, do not
    /// know yet.
    private func endSessions(of application: String, count: Int, admin: PostgresConnection) async throws {
        let ended = try await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [.text(application)])
        #expect(ended.rowCount == count)
        for row in 0..<ended.rowCount { #expect(try ended.bool(row, 0)) }
        try await waitUntil("the sessions of \(application) ended") {
            try await admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", [.text(application)]
            ).int64(0, 0) == 0
        }
    }

    @Test func `a setting given for every session holds again on the new session after one was lost`() async throws {
        let application = "rk_setup_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let connection = try await PostgresConnection(conninfo: try TestPostgres.requireConninfo() + " application_name=\(application)")
        try await connection.executeOnEverySession(
            "SELECT set_config('statement_timeout', $1, false)", [.text("1234ms")], operation: "set the statement timeout")
        let first = await connection.backendProcessID
        let admin = try await PostgresConnection(conninfo: try TestPostgres.requireConninfo())
        try await endSessions(of: application, count: 1, admin: admin)

        // The first statement may find the session gone; the next one runs on a new session.
        do {
            _ = try await connection.execute("SELECT 1")
        } catch {
            #expect(error.kind == .connection, "\(error)")
        }
        let shown = try await connection.execute("SHOW statement_timeout").string(0, 0)
        #expect(await connection.backendProcessID != first)
        #expect(shown == "1234ms")
    }

    /// Runs `body` while a push holds the server's first connection (stopped at its gate,
    /// before COMMIT), so that the requests of `body` run on the second; returns once the held
    /// push committed, with its outcome (throws its failure).
    private func holdingFirstConnection(
        of server: PostgresSyncServer, gates: Gates, _ body: () async throws -> Void
    ) async throws -> SyncOutcome? {
        let space = TestPostgres.space("held")
        let gate = BlockingGate()
        gates.withLock { $0[space] = gate }
        let held = Task {
            do {
                return try await server.push(
                    space: space, operations: [operation("holder", 1, put("notes", "h", "H", base: nil))])
            } catch {
                gate.arrive()  // failed before its gate: the wait below ends, and the failure is thrown below
                throw error
            }
        }
        await gate.arrival()
        do {
            try await body()
        } catch {
            gate.open()
            _ = await held.result
            throw error
        }
        gate.open()
        return try await held.value.first
    }

    /// The backends serving the server's connections now (read while they run nothing).
    private func backends(of server: PostgresSyncServer) async -> Set<Int32> {
        var pids: Set<Int32> = []
        for connection in server.connections { pids.insert(await connection.backendProcessID) }
        return pids
    }

    @Test func `every pooled connection whose session ended while idle connects again, and its next push or pull succeeds`()
        async throws
    {
        let gates = Gates([:])
        let (server, application) = try await openServer(connections: 2, gates: gates)
        let admin = try await TestPostgres.connection()
        let space = TestPostgres.space("reconnect")

        // Both connections serve a push and a pull.
        let warmUp = try await holdingFirstConnection(of: server, gates: gates) {
            let pushed = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "A", base: nil))])
            #expect(pushed.map(\.result) == [.applied(SyncServerVersion(1))])
            #expect(try await server.pull(space: space, after: .start, limit: 10).changes.map(\.key) == ["a"])
        }
        #expect(warmUp?.result == .applied(SyncServerVersion(1)))
        let first = await backends(of: server)
        #expect(first.count == 2)

        // Pushes first: on the first connection (held), then on the second.
        try await endSessions(of: application, count: 2, admin: admin)
        let heldPush = try await holdingFirstConnection(of: server, gates: gates) {
            let pushed = try await server.push(space: space, operations: [operation("phone", 2, put("notes", "b", "B", base: nil))])
            #expect(pushed.map(\.result) == [.applied(SyncServerVersion(2))])
        }
        #expect(heldPush?.result == .applied(SyncServerVersion(1)))
        let second = await backends(of: server)
        #expect(second.count == 2)
        #expect(second.isDisjoint(with: first), "both connections have new sessions")

        // Pulls first: on the first connection, then on the second (the first held by a push).
        try await endSessions(of: application, count: 2, admin: admin)
        #expect(try await server.pull(space: space, after: .start, limit: 10).changes.map(\.key) == ["a", "b"])
        let pullHeld = try await holdingFirstConnection(of: server, gates: gates) {
            let page = try await server.pull(space: space, after: SyncCursor(counter: 1), limit: 10)
            #expect(page.changes.map(\.key) == ["b"])
        }
        #expect(pullHeld?.result == .applied(SyncServerVersion(1)))
        let third = await backends(of: server)
        #expect(third.count == 2)
        #expect(third.isDisjoint(with: second), "both connections have new sessions")

        // Each push applied once.
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 2))
        #expect(try await server.snapshot(space: space) == ["notes/a": .text("A"), "notes/b": .text("B")])
    }

    @Test func `a push whose session is lost after its commit runs again and is answered as a re-delivery, applied once`()
        async throws
    {
        let space = TestPostgres.space("lost-answer")
        let calls = Counter()
        // The first time: the push has committed; its session ends before the answer returns.
        let server = try await TestPostgres.server(
            hooks: .init(afterCommit: { pushed, connection in
                guard pushed == space, calls.increment() == 1 else { return }
                try connection.execute("SELECT pg_terminate_backend(pg_backend_pid())", operation: "test: end the session")
                try connection.execute("SELECT 1", operation: "test: find the session ended")
            }))
        let pid = await server.connection.backendProcessID
        let first = operation("phone", 1, put("notes", "a", "A", base: nil))
        let outcomes = try await server.push(space: space, operations: [first])
        #expect(calls.count == 2, "run once more")
        #expect(outcomes == [SyncOutcome(first, result: .applied(SyncServerVersion(1)), isRedelivery: true)])
        #expect(await server.connection.backendProcessID != pid)
        // Applied once: the counter moved once, and the next operation takes the next value.
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 1))
        let next = try await server.push(space: space, operations: [operation("phone", 2, put("notes", "b", "B", base: nil))])
        #expect(next.map(\.result) == [.applied(SyncServerVersion(2))])
        #expect(try await server.snapshot(space: space) == ["notes/a": .text("A"), "notes/b": .text("B")])
    }

    @Test func `a session lost again in the second attempt is reported as unreachable, and the next request connects again`()
        async throws
    {
        let space = TestPostgres.space("lost-twice")
        let calls = Counter()
        // Both attempts lose their session after their commit; later pushes do not.
        let server = try await TestPostgres.server(
            hooks: .init(afterCommit: { pushed, connection in
                guard pushed == space, calls.increment() <= 2 else { return }
                try connection.execute("SELECT pg_terminate_backend(pg_backend_pid())", operation: "test: end the session")
                try connection.execute("SELECT 1", operation: "test: find the session ended")
            }))
        let first = operation("phone", 1, put("notes", "a", "A", base: nil))
        let error = await #expect(throws: SyncError.self) {
            try await server.push(space: space, operations: [first])
        }
        #expect(error?.code == .unreachable)
        #expect(calls.count == 2, "one attempt more, not two")
        // Pushed again: a new session, and the stored outcome of the first attempt's commit.
        let again = try await server.push(space: space, operations: [first])
        #expect(calls.count == 3)
        #expect(again == [SyncOutcome(first, result: .applied(SyncServerVersion(1)), isRedelivery: true)])
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 1))
    }
}
