import Foundation
import Testing
import RecordKeeperSync

/// Live pulls held by a server (``InMemorySyncServer`` over ``SyncChangeWaiters``): a held
/// pull answers the push that commits while it waits, a notification that comes between the
/// empty pull and the wait is not lost, and a held pull ends at its deadline or when cancelled.
@Suite struct SyncLivePullTests {
    private func push(_ server: InMemorySyncServer, _ collection: String, _ key: String, sequence: Int64) async throws {
        _ = try await server.push(
            space: "s",
            operations: [
                SyncOperation(
                    device: "d", sequence: sequence,
                    changes: [SyncChange(collection: collection, key: key, value: .payload(Data("v".utf8)), base: nil)])
            ])
    }

    /// Waits (a handshake on the server's state, not a sleep) until it holds `count` pulls.
    private func untilHeld(_ server: InMemorySyncServer, _ count: Int) async {
        while await server.heldPulls != count { await Task.yield() }
    }

    @Test func `a held pull answers the push that commits while it waits`() async throws {
        let server = InMemorySyncServer()
        try await push(server, "notes", "a", sequence: 1)
        let held = Task {
            try await server.pull(space: "s", after: SyncCursor(counter: 1), limit: 10, collections: nil, wait: .seconds(300))
        }
        await untilHeld(server, 1)
        try await push(server, "notes", "b", sequence: 2)
        let page = try await held.value
        #expect(page.changes.map(\.key) == ["b"])
        #expect(page.cursor == SyncCursor(counter: 2))
        #expect(await server.heldPulls == 0)
    }

    @Test func `a held pull of one collection is not answered with another's change`() async throws {
        let server = InMemorySyncServer()
        let held = Task {
            try await server.pull(space: "s", after: .start, limit: 10, collections: ["notes"], wait: .seconds(300))
        }
        await untilHeld(server, 1)
        try await push(server, "tags", "t", sequence: 1)
        // Woken by the tags change, it pulled nothing and waits again, from the space's counter.
        await untilHeld(server, 1)
        try await push(server, "notes", "n", sequence: 2)
        let page = try await held.value
        #expect(page.changes.map(\.key) == ["n"])
        #expect(page.cursor == SyncCursor(counter: 2))
    }

    @Test func `a held pull with nothing to answer ends with an empty page at its deadline`() async throws {
        let server = InMemorySyncServer()
        try await push(server, "notes", "a", sequence: 1)
        let page = try await server.pull(
            space: "s", after: SyncCursor(counter: 1), limit: 10, collections: nil, wait: .milliseconds(20))
        #expect(page.changes.isEmpty)
        #expect(page.cursor == SyncCursor(counter: 1))
        #expect(await server.heldPulls == 0)
    }

    @Test func `a held pull ends when its task is cancelled`() async throws {
        let server = InMemorySyncServer()
        let held = Task {
            try await server.pull(space: "s", after: .start, limit: 10, collections: nil, wait: .seconds(300))
        }
        await untilHeld(server, 1)
        held.cancel()
        await #expect(throws: CancellationError.self) { _ = try await held.value }
        #expect(await server.heldPulls == 0)
    }

    @Test func `a notification between the empty pull and the wait is not lost`() async throws {
        let waiters = SyncChangeWaiters()
        let registration = waiters.register(space: "s")
        waiters.notify(space: "t")
        #expect(waiters.count == 1, "another space's notification leaves it registered")
        waiters.notify(space: "s")
        // Far deadline: returns only because it was notified before it waited.
        try await waiters.wait(registration, until: .now.advanced(by: .seconds(300)))
        #expect(waiters.count == 0)
        #expect(waiters.spaces.isEmpty)
    }

    @Test func `waking every space wakes every waiter`() async throws {
        let waiters = SyncChangeWaiters()
        let registrations = ["a", "b", "c"].map { waiters.register(space: $0) }
        #expect(Set(waiters.spaces) == ["a", "b", "c"])
        let waiting = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for registration in registrations {
                    group.addTask { try await waiters.wait(registration, until: .now.advanced(by: .seconds(300))) }
                }
                try await group.waitForAll()
            }
        }
        waiters.notifyAll()
        try await waiting.value
        #expect(waiters.count == 0)
    }
}
