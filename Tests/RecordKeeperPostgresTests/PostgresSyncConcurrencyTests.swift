import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// Pushes and pulls running at once against a real PostgreSQL, interleaved by gates inside the
/// server's push transaction (no sleeps): the pull cursor never skips a change, writers of one
/// space queue while other spaces go on, and a batch of operations is a fixed number of
/// statements.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct PostgresSyncConcurrencyTests {
    /// Returns once the backend `pid` waits for a lock. (Read the pid before the push starts:
    /// while a push blocks, its connection answers nothing else.)
    private func waitUntilBlocked(pid: Int32, monitor: PostgresConnection) async throws {
        try await TestPostgres.waitUntil(backend: pid, waitsForLock: true, monitor: monitor)
    }

    @Test func `pushes committing out of order never make a pull skip a change`() async throws {
        let space = TestPostgres.space("interleave")
        let gateA = BlockingGate()
        let gateB = BlockingGate()
        let serverA = try await TestPostgres.server(hooks: .init(beforeCommit: { _ in gateA.arriveAndWait() }))
        let serverB = try await TestPostgres.server(hooks: .init(beforeCommit: { _ in gateB.arriveAndWait() }))
        let other = try await TestPostgres.server()
        let puller = try await TestPostgres.server()
        let monitor = try await TestPostgres.connection()

        _ = try await other.push(space: space, operations: [operation("setup", 1, put("notes", "base", "0", base: nil))])
        let start = try await puller.pullAll(space: space).cursor
        #expect(start == SyncCursor(counter: 1))

        // A locks the counter, writes two records and stops before COMMIT.
        let pushA = Task {
            try await serverA.push(
                space: space,
                operations: [operation("a", 1, put("notes", "a1", "A", base: nil), put("notes", "a2", "A", base: nil))])
        }
        await gateA.arrival()
        // B queues on the counter lock behind A.
        let pidB = await serverB.connection.backendProcessID
        let pushB = Task {
            try await serverB.push(space: space, operations: [operation("b", 1, put("notes", "b1", "B", base: nil))])
        }
        try await waitUntilBlocked(pid: pidB, monitor: monitor)

        // Meanwhile another space is not held up.
        let elsewhere = TestPostgres.space("elsewhere")
        let parallel = try await other.push(space: elsewhere, operations: [operation("c", 1, put("notes", "c", "C", base: nil))])
        #expect(parallel.first?.result == .applied(SyncServerVersion(1)))

        // A pull now sees neither push, and its cursor stays where it was.
        let during = try await puller.pull(space: space, after: start, limit: 100)
        #expect(during == SyncPage(changes: [], cursor: start, hasMore: false))

        // A commits; B takes the lock, writes, and stops before its COMMIT.
        gateA.open()
        #expect(try await pushA.value.first?.result == .applied(SyncServerVersion(2)))
        await gateB.arrival()
        let afterA = try await puller.pull(space: space, after: start, limit: 100)
        #expect(afterA.changes.map(\.key) == ["a1", "a2"])
        #expect(afterA.cursor == SyncCursor(counter: 2), "the cursor must not pass B's uncommitted change")

        gateB.open()
        #expect(try await pushB.value.first?.result == .applied(SyncServerVersion(3)))
        let afterB = try await puller.pull(space: space, after: afterA.cursor, limit: 100)
        #expect(afterB.changes.map(\.key) == ["b1"])
        #expect(afterB.cursor == SyncCursor(counter: 3))
        #expect(try await puller.snapshot(space: space).count == 4)
    }

    @Test func `the same operation pushed twice at once is applied once`() async throws {
        let space = TestPostgres.space("twice")
        let gate = BlockingGate()
        let first = try await TestPostgres.server(hooks: .init(beforeCommit: { _ in gate.arriveAndWait() }))
        let second = try await TestPostgres.server()
        let monitor = try await TestPostgres.connection()
        let op = operation("phone", 1, put("notes", "a", "once", base: nil))

        let pushFirst = Task { try await first.push(space: space, operations: [op]) }
        await gate.arrival()
        let pidSecond = await second.connection.backendProcessID
        let pushSecond = Task { try await second.push(space: space, operations: [op]) }
        try await waitUntilBlocked(pid: pidSecond, monitor: monitor)
        gate.open()

        let a = try await pushFirst.value
        let b = try await pushSecond.value
        #expect(a == [SyncOutcome(op, result: .applied(SyncServerVersion(1)))])
        #expect(b == [SyncOutcome(op, result: .applied(SyncServerVersion(1)), isRedelivery: true)])
        #expect(try await second.pullAll(space: space).cursor == SyncCursor(counter: 1))
    }

    @Test func `a puller running during many concurrent pushes sees every change`() async throws {
        let space = TestPostgres.space("stress")
        let writers = 4
        let pushesPerWriter = 15
        var servers: [PostgresSyncServer] = []
        for _ in 0..<writers { servers.append(try await TestPostgres.server()) }
        let puller = try await TestPostgres.server()
        let done = Gate()

        // The puller applies pages as a device would, until the writers are done and a last
        // pull reached the head. Every key is written once, so a skipped change stays missing.
        let pulling = Task {
            var cursor = SyncCursor.start
            var seen: [String: SyncServerVersion] = [:]
            var finishing = false
            while true {
                let page = try await puller.pull(space: space, after: cursor, limit: 7)
                #expect(page.cursor >= cursor)
                for change in page.changes { seen[change.key] = change.version }
                cursor = page.cursor
                if page.hasMore { continue }
                if finishing { return (seen, cursor) }
                finishing = await done.opened
                await Task.yield()
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, server) in servers.enumerated() {
                group.addTask {
                    for push in 0..<pushesPerWriter {
                        let device = "writer\(index)"
                        let outcomes = try await server.push(
                            space: space,
                            operations: (0..<2).map { n in
                                operation(device, Int64(push * 2 + n + 1), put("notes", "\(device)-\(push)-\(n)", "v", base: nil))
                            })
                        #expect(outcomes.allSatisfy { $0.result.appliedVersion != nil })
                    }
                }
            }
            try await group.waitForAll()
        }
        await done.open()
        let (seen, cursor) = try await pulling.value
        #expect(seen.count == writers * pushesPerWriter * 2)
        #expect(cursor == SyncCursor(counter: Int64(writers * pushesPerWriter * 2)))
        #expect(Set(seen.values).count == writers * pushesPerWriter * 2, "one counter value per operation")
    }

    @Test func `a push sends many operations in a fixed number of statements`() async throws {
        let server = try await TestPostgres.server()
        let space = TestPostgres.space("batch")
        func statements(_ operations: [SyncOperation]) async throws -> Int {
            let before = await server.connection.statementCount
            let outcomes = try await server.push(space: space, operations: operations)
            #expect(outcomes.allSatisfy { $0.result.appliedVersion != nil })
            return await server.connection.statementCount - before
        }
        let one = try await statements([operation("phone", 1, put("notes", "first", "1", base: nil))])
        let many = try await statements(
            (2...2001).map { operation("phone", Int64($0), put("notes", "k\($0)", String(repeating: "x", count: 100), base: nil)) })
        let upload = try await statements([
            SyncOperation(
                device: "phone", sequence: 3000,
                changes: (1...5000).map { put("upload", "u\($0)", "payload \($0)", base: nil) })
        ])
        #expect(one == 5)  // BEGIN, counter lock, one read, one write, COMMIT
        #expect(many == one, "2,000 operations must take as many round trips as one")
        #expect(upload == one, "one operation of 5,000 records must take as many round trips as one record")

        // And a pull of them all is one statement per page plus the transaction, and the
        // record of the cursor handed out when it is the hour's lowest (the first pull here).
        var before = await server.connection.statementCount
        let page = try await server.pull(space: space, after: .start, limit: 10_000)
        #expect(page.changes.count == 7001)
        #expect(await server.connection.statementCount - before == 5)  // BEGIN, counter, rows, COMMIT, cursor
        before = await server.connection.statementCount
        _ = try await server.pull(space: space, after: .start, limit: 10_000)
        #expect(await server.connection.statementCount - before == 4)  // BEGIN, counter, rows, COMMIT
    }

    @Test func `a push that fails before its commit leaves nothing, and can be sent again`() async throws {
        struct Crash: Error {}
        let space = TestPostgres.space("atomic")
        let failing = try await TestPostgres.server(hooks: .init(beforeCommit: { _ in throw Crash() }))
        let server = try await TestPostgres.server()
        _ = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "A1", base: nil))])
        let batch = [
            operation("phone", 2, put("notes", "a", "A2", base: 1), put("notes", "b", "B", base: nil)),
            operation("laptop", 1, delete("notes", "a", base: 1)),
        ]
        let error = await #expect(throws: SyncError.self) {
            try await failing.push(space: space, operations: batch)
        }
        #expect(error?.code == .serverFailure)
        // Nothing of it: no records, no counter value, no recorded id or sequence.
        #expect(try await server.snapshot(space: space) == ["notes/a": .text("A1")])
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 1))
        let again = try await server.push(space: space, operations: batch)
        #expect(again.map(\.isRedelivery) == [false, false])
        #expect(again[0].result == .applied(SyncServerVersion(2)))
        #expect(again[1].result.conflicts.first?.server?.version == SyncServerVersion(2))
    }

    @Test func `a server with several connections serves other spaces while one push waits`() async throws {
        let held = TestPostgres.space("held")
        let free = TestPostgres.space("free")
        let gate = BlockingGate()
        let server = try await TestPostgres.server(
            connections: 2, hooks: .init(beforeCommit: { space in if space == held { gate.arriveAndWait() } }))
        let holding = Task {
            try await server.push(space: held, operations: [operation("phone", 1, put("notes", "a", "A", base: nil))])
        }
        await gate.arrival()
        // The second connection serves another space's push and pull meanwhile.
        let other = try await server.push(space: free, operations: [operation("phone", 1, put("notes", "b", "B", base: nil))])
        #expect(other.first?.result == .applied(SyncServerVersion(1)))
        #expect(try await server.snapshot(space: free) == ["notes/b": .text("B")])
        gate.open()
        #expect(try await holding.value.first?.result == .applied(SyncServerVersion(1)))
        #expect(try await server.snapshot(space: held) == ["notes/a": .text("A")])

        let error = await #expect(throws: SyncError.self) {
            try await PostgresSyncServer.connect(TestPostgres.requireConninfo(), connections: 0)
        }
        #expect(error?.code == .invalidRequest)
    }

    @Test func `a server whose idle connection was cut connects again and answers the next request`() async throws {
        let space = TestPostgres.space("cut")
        let server = try await TestPostgres.server()
        let monitor = try await TestPostgres.connection()
        _ = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "1", base: nil))])
        let pid = await server.connection.backendProcessID
        let terminated = try await monitor.transaction { connection in
            try connection.execute("SELECT pg_terminate_backend($1::integer)", [.int64(Int64(pid))]).bool(0, 0)
        }
        #expect(terminated)
        // pg_terminate_backend only sends the signal: wait until the backend has gone (left
        // pg_stat_activity, which it does on its way out), so the pull meets a dead session.
        try await waitUntil("backend \(pid) ended") {
            try await monitor.transaction(operation: "watch backends") { connection in
                try connection.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", [.int64(Int64(pid))]).int64(0, 0)
            } == 0
        }
        // The session died while idle, so nothing of the pull had reached it: the pull runs
        // again on a new session and is answered.
        let page = try await server.pull(space: space, after: .start, limit: 10)
        #expect(page.changes.map(\.key) == ["a"])
        #expect(await server.connection.backendProcessID != pid)
        // Later requests use the new session; the push is deduplicated as ever.
        let again = try await server.push(space: space, operations: [operation("phone", 2, put("notes", "b", "2", base: nil))])
        #expect(again.first?.result == .applied(SyncServerVersion(2)))
        #expect(await server.connection.backendProcessID != pid)
    }
}
