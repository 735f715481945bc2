import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// Live pulls held by `PostgresSyncServer`: two server instances on one database, as two
/// relays are; a push through one wakes a pull held by the other, by either wake
/// (`LISTEN`/`NOTIFY` or polling the counters), and after its wake session was ended by the
/// server; a held pull holds no connection, ends at its deadline, and frees its waiter when
/// cancelled.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct PostgresLivePullTests {
    static let wakes: [PostgresSyncServer.LiveWake] = [.listen, .poll(every: .milliseconds(5))]

    /// Two servers (one connection each) on one private schema.
    private func withTwoServers(
        _ wake: PostgresSyncServer.LiveWake,
        _ body: (_ x: PostgresSyncServer, _ y: PostgresSyncServer, _ conninfo: String) async throws -> Void
    ) async throws {
        try await TestPostgres.withPrivateSchema(prefix: "live_pull") { conninfo, _ in
            let x = try await PostgresSyncServer.connect(conninfo, liveWake: wake)
            let y = try await PostgresSyncServer.connect(conninfo, liveWake: wake)
            try await body(x, y, conninfo)
        }
    }

    private func write(_ key: String, sequence: Int64, device: String = "d") -> SyncOperation {
        SyncOperation(
            device: device, sequence: sequence,
            changes: [SyncChange(collection: "notes", key: key, value: .payload(Data(key.utf8)), base: nil)])
    }

    /// Waits (a handshake on the server's state) until it holds `count` pulls and its wake
    /// session has been set up `sessions` times.
    private func untilHeld(_ server: PostgresSyncServer, _ count: Int, sessions: Int = 1) async throws {
        try await waitUntil("\(count) held pull(s), wake session set up \(sessions) time(s)") {
            server.heldPulls == count && server.wakeSession.sessions >= sessions
        }
    }

    @Test(arguments: wakes)
    func `a pull held on one server is answered by a push through another, and holds no connection meanwhile`(
        wake: PostgresSyncServer.LiveWake
    ) async throws {
        try await withTwoServers(wake) { x, y, _ in
            let space = TestPostgres.space("live")
            _ = try await y.push(space: space, operations: [write("a", sequence: 1)])
            let held = Task {
                try await x.pull(space: space, after: SyncCursor(counter: 1), limit: 10, collections: nil, wait: .seconds(300))
            }
            try await untilHeld(x, 1)
            // x has one connection: the held pull does not occupy it.
            _ = try await x.push(space: TestPostgres.space("other"), operations: [write("o", sequence: 1)])
            #expect(x.heldPulls == 1)
            _ = try await y.push(space: space, operations: [write("b", sequence: 2)])
            let page = try await held.value
            #expect(page.changes.map(\.key) == ["b"])
            #expect(page.cursor == SyncCursor(counter: 2))
            #expect(x.heldPulls == 0)
        }
    }

    @Test(arguments: wakes)
    func `a push through the server itself wakes its own held pull`(wake: PostgresSyncServer.LiveWake) async throws {
        try await withTwoServers(wake) { x, _, _ in
            let space = TestPostgres.space("own")
            let held = Task {
                try await x.pull(space: space, after: .start, limit: 10, collections: nil, wait: .seconds(300))
            }
            try await untilHeld(x, 1)
            _ = try await x.push(space: space, operations: [write("a", sequence: 1)])
            #expect(try await held.value.changes.map(\.key) == ["a"])
        }
    }

    @Test func `a held pull with nothing to answer ends with an empty page at its deadline`() async throws {
        try await withTwoServers(.listen) { x, y, _ in
            let space = TestPostgres.space("deadline")
            _ = try await y.push(space: space, operations: [write("a", sequence: 1)])
            let page = try await x.pull(
                space: space, after: SyncCursor(counter: 1), limit: 10, collections: nil, wait: .milliseconds(50))
            #expect(page.changes.isEmpty)
            #expect(page.cursor == SyncCursor(counter: 1))
            #expect(!page.hasMore)
            #expect(x.heldPulls == 0)
        }
    }

    @Test func `a cancelled held pull frees its waiter`() async throws {
        try await withTwoServers(.listen) { x, _, _ in
            let held = Task {
                try await x.pull(space: TestPostgres.space("cancel"), after: .start, limit: 10, collections: nil, wait: .seconds(300))
            }
            try await untilHeld(x, 1)
            held.cancel()
            await #expect(throws: CancellationError.self) { _ = try await held.value }
            #expect(x.heldPulls == 0)
        }
    }

    @Test func `a wait out of range is refused`() async throws {
        try await withTwoServers(.listen) { x, _, _ in
            for wait in [Duration.milliseconds(-1), SyncPage.maximumWait + .seconds(1)] {
                await #expect(throws: SyncError.self) {
                    _ = try await x.pull(space: "s", after: .start, limit: 10, collections: nil, wait: wait)
                }
            }
            #expect(x.heldPulls == 0)
        }
    }

    @Test(arguments: wakes)
    func `a wake session whose set-up fails every time backs off and counts no session`(
        wake: PostgresSyncServer.LiveWake
    ) async throws {
        try await TestPostgres.withPrivateSchema(prefix: "live_pull") { conninfo, _ in
            // The wake session on a search path without the tables: polling fails every
            // time, and LISTEN works (it needs no table).
            let x = try await PostgresSyncServer.connect(
                conninfo, liveWake: wake, wakeConninfo: conninfo + " options='-c search_path=rk_no_such_schema'")
            let space = TestPostgres.space("failing_wake")
            let held = Task {
                try await x.pull(space: space, after: .start, limit: 10, collections: nil, wait: .seconds(300))
            }
            defer { held.cancel() }
            guard case .poll = wake else {
                try await untilHeld(x, 1)
                return
            }
            try await waitUntil("the wake session failed four times") { x.wakeSession.failures >= 4 }
            // Counted (and the backoff started over, and every waiter woken) only once a
            // poll worked: retrying every 50 ms woke every held pull about 18 times a second.
            #expect(x.wakeSession.sessions == 0, "a poll that never worked is no session")
            #expect(x.heldPulls == 1, "the pull is still held, to its deadline")
        }
    }

    @Test(arguments: wakes)
    func `after the server ends the wake session it connects again, and a later push still wakes a held pull`(
        wake: PostgresSyncServer.LiveWake
    ) async throws {
        try await withTwoServers(wake) { x, y, _ in
            let space = TestPostgres.space("reconnect")
            let held = Task {
                try await x.pull(space: space, after: .start, limit: 10, collections: nil, wait: .seconds(300))
            }
            try await untilHeld(x, 1)
            let pid = try #require(x.wakeSession.backendProcessID)
            let admin = try await TestPostgres.connection()
            let ended = try await admin.execute("SELECT pg_terminate_backend($1::int)", [.int64(Int64(pid))]).bool(0, 0)
            #expect(ended)
            // Woken by the lost session (a notification may have been lost), the pull pulled
            // again and waits on, through the new session.
            try await untilHeld(x, 1, sessions: 2)
            #expect(x.wakeSession.failures >= 1)
            #expect(x.wakeSession.backendProcessID != pid)
            _ = try await y.push(space: space, operations: [write("a", sequence: 1)])
            #expect(try await held.value.changes.map(\.key) == ["a"])
        }
    }
}
