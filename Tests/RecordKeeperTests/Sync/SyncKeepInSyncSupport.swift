import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// An ``InMemorySyncServer`` that can be taken down (every request throws `unreachable`) or
/// made to refuse every request with an error, counting requests; its live pulls are the
/// inner server's, so `heldPulls` stays the handshake.
actor SwitchableServer: RecordSyncServer {
    let inner: InMemorySyncServer
    private(set) var requests = 0
    private(set) var pushes = 0
    var down = false
    var refusal: SyncError?

    init(_ inner: InMemorySyncServer = InMemorySyncServer()) {
        self.inner = inner
    }

    func setDown(_ value: Bool) { down = value }
    func setRefusal(_ error: SyncError?) { refusal = error }
    var heldPulls: Int { get async { await inner.heldPulls } }

    private func admit() throws {
        requests += 1
        if let refusal { throw refusal }
        if down { throw SyncError(.unreachable, "test: the server is down") }
    }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try admit()
        pushes += 1
        return try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        try admit()
        return try await inner.pull(space: space, after: cursor, limit: limit, collections: collections)
    }

    func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try admit()
        return try await inner.pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
    }
}

/// A server whose ordinary pulls after the start wait until cancelled (the second page of a
/// first pull never comes), telling `secondPageAsked` when one does.
struct StallingSecondPageServer: RecordSyncServer {
    let inner: InMemorySyncServer
    let secondPageAsked: AsyncStream<Void>.Continuation

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        if cursor != .start {
            secondPageAsked.yield()
            // A hang until cancelled (the test cancels), not a timing.
            try await Task.sleep(for: .seconds(3600))
        }
        return try await inner.pull(space: space, after: cursor, limit: limit, collections: collections)
    }
}

/// The durations continuous sync slept for, in order; `onSleep` runs at each (with its
/// 1-based number) before the sleep returns at once.
final class RecordedSleeps: @unchecked Sendable {
    // `@unchecked Sendable`: `delays` is read and written only under `lock`.
    private let lock = NSLock()
    private var delays: [Duration] = []
    let onSleep: @Sendable (Int) async -> Void

    init(onSleep: @escaping @Sendable (Int) async -> Void = { _ in }) {
        self.onSleep = onSleep
    }

    var recorded: [Duration] { lock.withLock { delays } }

    func sleep(_ duration: Duration) async throws {
        let number = lock.withLock { () -> Int in
            delays.append(duration)
            return delays.count
        }
        await onSleep(number)
        try Task.checkCancellation()
    }
}

/// A short name of an activity, for comparing sequences.
func activityName(_ activity: SyncActivity) -> String {
    switch activity {
    case .syncing: "syncing"
    case .upToDate: "upToDate"
    case .needsAttention: "needsAttention"
    case .offline(let error, _, let failures): "offline(\(error.code), \(failures))"
    case .stopped(let error): error.map { "stopped(\(($0 as? SyncError)?.code.name ?? "\($0)"))" } ?? "stopped"
    }
}

/// Reads activities from `iterator` until one `matches`, returning every one read.
func activities(
    _ iterator: inout AsyncStream<SyncActivity>.Iterator, until matches: (SyncActivity) -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> [SyncActivity] {
    var read: [SyncActivity] = []
    while let next = await iterator.next() {
        read.append(next)
        if matches(next) { return read }
    }
    Issue.record("the activity stream ended before the expected activity", sourceLocation: sourceLocation)
    return read
}

/// Whether an activity is the end of a successful round.
func isSettled(_ activity: SyncActivity) -> Bool {
    switch activity {
    case .upToDate, .needsAttention: true
    default: false
    }
}

/// The report of a settled activity.
func report(_ activity: SyncActivity?) -> SyncReport? {
    switch activity {
    case .upToDate(let report)?, .needsAttention(_, let report)?: report
    default: nil
    }
}

/// Options for tests: no push delay, the backoff's sleeps recorded.
func testOptions(_ sleeps: RecordedSleeps = RecordedSleeps(), random: Double = 0.5) -> KeepInSyncOptions {
    KeepInSyncOptions(
        pushDelay: .zero, pullWait: .seconds(300), sleep: { try await sleeps.sleep($0) },
        now: { Date(timeIntervalSince1970: 1_000) }, random: { random })
}

/// Holds the next pull that is not live, once armed, until the test opens the gate: a round
/// that has pushed and waits for its pull, for writes made in between. Live pulls are held by
/// the inner server, as always.
struct HeldPullServer: RecordSyncServer {
    let inner: InMemorySyncServer
    let gate = Gate()
    private let armed = Protected(false)
    let asked: AsyncStream<Void>
    private let askedContinuation: AsyncStream<Void>.Continuation

    init(inner: InMemorySyncServer) {
        self.inner = inner
        (asked, askedContinuation) = AsyncStream<Void>.makeStream()
    }

    /// The next pull that is not live waits for ``gate``.
    func arm() { armed.withLock { $0 = true } }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        let hold = armed.withLock { armed in
            defer { armed = false }
            return armed
        }
        if hold {
            askedContinuation.yield()
            await gate.wait()
        }
        return try await inner.pull(space: space, after: cursor, limit: limit, collections: collections)
    }

    func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try await inner.pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
    }
}
