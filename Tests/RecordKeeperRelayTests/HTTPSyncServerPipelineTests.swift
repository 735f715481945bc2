import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// `HTTPSyncServer`'s pipelined pulls: the next page is fetched ahead, from the cursor the
/// relay names in `RecordKeeper-Next-Cursor`, and handed only to the pull that asks for it.
/// The relay here answers one page per request (`maxPagesPerAnswer = 1`, as relays before
/// `pages=` did); answers of several pages are `HTTPSyncServerPagesTests`.
@Suite(
    .timeLimit(.minutes(10)),
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
struct HTTPSyncServerPipelineTests {
    /// A relay that answers one page per request.
    private let onePage: (inout SyncRelay.Configuration) -> Void = { $0.maxPagesPerAnswer = 1 }

    @Test func `pipelined pulls give the pages of sequential pulls, with no request more`() async throws {
        let inner = InMemorySyncServer()
        try await fillAlice(inner)
        let direct = try await sequentialPages(inner, limit: 4)
        try await withRelay(server: inner, onePage) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let pulled = try await sequentialPages(client, limit: 4)
            #expect(pulled == direct)
            #expect(relay.server.calls.pulls == direct.count, "the last page names no next one")
        }
    }

    @Test func `the next page is fetched ahead, and handed only to a pull of the same cursor, limit and space`()
        async throws
    {
        let watched = WatchedPullServer(InMemorySyncServer())
        try await fillAlice(watched)
        try await withRelay(server: watched, onePage) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let first = try await client.pull(space: "alice", after: .start, limit: 4)
            #expect(first.hasMore)
            // Asked for before any pull asks: the fetch ahead reaches the server.
            #expect(await watched.nextPull() == PullAsked(cursor: .start, limit: 4))
            #expect(await watched.nextPull() == PullAsked(cursor: first.cursor, limit: 4))

            // Something changes after the fetch ahead: a pull of another limit fetches anew.
            _ = try await watched.push(space: "alice", operations: [.writing(["late": "x"], sequence: 6)])
            let other = try await client.pull(space: "alice", after: first.cursor, limit: 3)
            #expect(await watched.nextPull() == PullAsked(cursor: first.cursor, limit: 3))
            let fresh = try await watched.inner.pull(space: "alice", after: first.cursor, limit: 3)
            #expect(other == fresh)

            // Another space: the relay's 403, never the page fetched for alice.
            let again = try await client.pull(space: "alice", after: .start, limit: 4)
            #expect(again == first, "and the page after it is fetched ahead again")
            let bob = await #expect(throws: SyncError.self) {
                _ = try await client.pull(space: "bob", after: first.cursor, limit: 4)
            }
            #expect(bob?.code == .forbidden)
            let second = try await client.pull(space: "alice", after: first.cursor, limit: 4)
            let expected = try await watched.inner.pull(space: "alice", after: first.cursor, limit: 4)
            #expect(second == expected)
        }
    }

    @Test func `an error of the page fetched ahead is thrown to the pull that asks for it`() async throws {
        let watched = WatchedPullServer(InMemorySyncServer())
        try await fillAlice(watched)
        try await withRelay(server: watched, onePage) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            watched.failOnce(after: try await watched.inner.pull(space: "alice", after: .start, limit: 4).cursor)
            let first = try await client.pull(space: "alice", after: .start, limit: 4)
            let error = await #expect(throws: SyncError.self) {
                _ = try await client.pull(space: "alice", after: first.cursor, limit: 4)
            }
            #expect(error?.code == .unreachable, "\(String(describing: error))")
            let retried = try await client.pull(space: "alice", after: first.cursor, limit: 4)
            let expected = try await watched.inner.pull(space: "alice", after: first.cursor, limit: 4)
            #expect(retried == expected)
        }
    }

    @Test func `cancelling the pull that waits for the page fetched ahead cancels it`() async throws {
        let watched = WatchedPullServer(InMemorySyncServer())
        try await fillAlice(watched)
        try await withRelay(server: watched, onePage) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let gate = Gate()
            watched.hold(after: try await watched.inner.pull(space: "alice", after: .start, limit: 4).cursor, on: gate)
            let first = try await client.pull(space: "alice", after: .start, limit: 4)
            _ = await watched.nextPull()
            #expect(await watched.nextPull() == PullAsked(cursor: first.cursor, limit: 4), "held at the server")
            let waiting = Task { try await client.pull(space: "alice", after: first.cursor, limit: 4) }
            waiting.cancel()
            // The server still holds the page: only the cancellation can end the wait.
            await #expect(throws: CancellationError.self) { _ = try await waiting.value }
            await gate.open()
        }
    }
}

/// A pull that reached the server.
struct PullAsked: Equatable, Sendable {
    let cursor: SyncCursor
    let limit: Int
}

/// The pulls that reached a server, in order, read one by one (waiting for the next).
actor PullLog {
    private var asked: [PullAsked] = []
    private var read = 0
    private var waiter: CheckedContinuation<PullAsked, Never>?

    func append(_ pull: PullAsked) {
        if let waiter {
            self.waiter = nil
            read += 1
            asked.append(pull)
            waiter.resume(returning: pull)
        } else {
            asked.append(pull)
        }
    }

    /// The next pull not read yet (waits for it).
    func next() async -> PullAsked {
        if read < asked.count {
            read += 1
            return asked[read - 1]
        }
        return await withCheckedContinuation { waiter = $0 }
    }
}

/// A sync server that reports each pull as it arrives, and can hold or fail the pull after a
/// given cursor.
final class WatchedPullServer: RecordSyncServer {
    let inner: any RecordSyncServer
    private let log = PullLog()
    private let state = Protected((hold: nil as (cursor: SyncCursor, gate: Gate)?, fail: nil as SyncCursor?))

    init(_ inner: any RecordSyncServer) {
        self.inner = inner
    }

    func hold(after cursor: SyncCursor, on gate: Gate) { state.withLock { $0.hold = (cursor, gate) } }
    func failOnce(after cursor: SyncCursor) { state.withLock { $0.fail = cursor } }

    /// The next pull to arrive (waits for it).
    func nextPull() async -> PullAsked { await log.next() }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        let (gate, fail) = state.withLock { state -> (Gate?, Bool) in
            let fail = state.fail == cursor
            if fail { state.fail = nil }
            return (state.hold?.cursor == cursor ? state.hold?.gate : nil, fail)
        }
        await log.append(PullAsked(cursor: cursor, limit: limit))
        if let gate { await gate.wait() }
        if fail { throw SyncError(.unreachable, "the database is down for this page") }
        return try await inner.pull(space: space, after: cursor, limit: limit)
    }
}
