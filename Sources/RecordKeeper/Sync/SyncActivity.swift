public import Foundation

/// What a store's continuous sync (``RecordSync/keepInSync(_:)``) is doing, as a screen shows
/// it. Read it from ``RecordSync/activity()``.
///
/// ```swift
/// for await activity in sync.activity() {
///     switch activity {
///     case .syncing: status = "Syncing…"
///     case .upToDate: status = "Up to date"
///     case .needsAttention(let conflicts, _): status = "\(conflicts.count) edit(s) to review"
///     case .offline(let error, let next, _): status = "Offline (\(error.code)), retrying at \(next)"
///     case .stopped(let error): status = error.map { "Stopped: \($0)" } ?? "Not syncing"
///     }
/// }
/// ```
public enum SyncActivity: Sendable {
    /// A round runs: pushing what is pending, pulling, or applying a live-pulled page.
    case syncing
    /// The last round pushed everything pending and pulled to the server's head; the store
    /// holds a live pull now. The report says what that round did.
    case upToDate(SyncReport)
    /// As ``upToDate(_:)``, but the store holds unresolved conflicts (every one of them, not
    /// only the round's new ones): resolve them with ``RecordStore/resolveSyncConflict(_:key:keeping:)``.
    /// Sync goes on meanwhile.
    case needsAttention([SyncRecordConflict], SyncReport)
    /// The last round failed in a way a later attempt may mend: the server could not be
    /// reached (``/RecordKeeperSync/SyncError/Code/unreachable``) or failed the request
    /// (``/RecordKeeperSync/SyncError/Code/serverFailure``). The next attempt starts at `nextAttempt` (a backoff
    /// with jitter, see ``SyncBackoff``); `failures` counts the failed rounds in a row. Local
    /// changes stay queued meanwhile.
    case offline(SyncError, nextAttempt: Date, failures: Int)
    /// Continuous sync is not running: it has not started, it ended because its task was
    /// cancelled (`nil`), or it stopped on an error that retrying cannot mend (a refused token,
    /// wrong settings, a store another device forked, a local storage failure), which
    /// ``RecordSync/keepInSync(_:)`` threw.
    case stopped((any Error)?)
}

/// How long continuous sync waits before it tries again after failed rounds: exponential,
/// capped, with jitter so that many devices coming back at once do not knock together.
///
/// After `n` failures in a row the base delay is `initial · 2^(n-1)`, at most ``maximum``;
/// the delay is half of the base plus a random part of the other half ("equal jitter"), so
/// delays never shrink from one failure to the next until the cap. A server that asks to be
/// left alone longer (``/RecordKeeperSync/SyncError/retryAfter``) gets at least that.
///
/// ```swift
/// SyncBackoff().delay(afterFailures: 3, random: 0.5)   // 3 seconds: base 4 s, 2 s + 0.5 · 2 s
/// ```
public struct SyncBackoff: Sendable, Hashable {
    /// The base delay after the first failure.
    public var initial: Duration
    /// The largest base delay.
    public var maximum: Duration

    /// Creates a backoff (by default 1 second, doubling up to 60).
    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The delay after `failures` failed rounds in a row (at least 1), for a random number
    /// `random` in `0..<1`.
    public func delay(afterFailures failures: Int, random: Double) -> Duration {
        var base = initial
        var doublings = max(0, failures - 1)
        while doublings > 0, base < maximum {
            base = base * 2
            doublings -= 1
        }
        let half = min(base, maximum) / 2
        let unit = min(max(random, 0), 1)
        // In whole nanoseconds, so that equal inputs give equal delays on every platform.
        let nanoseconds = Double(half.components.seconds) * 1e9 + Double(half.components.attoseconds) / 1e9
        return half + .nanoseconds(Int64((nanoseconds * unit).rounded()))
    }
}

/// How ``RecordSync/keepInSync(_:)`` runs. The defaults suit an app; tests inject the clock
/// and random source so that backoff is deterministic.
public struct KeepInSyncOptions: Sendable {
    /// How long a local commit waits before its push, so that a burst of commits goes in one
    /// push (default 20 ms; zero pushes at once).
    public var pushDelay: Duration
    /// How long one live pull asks the server to hold it (default 25 seconds, at most
    /// ``/RecordKeeperSync/SyncPage/maximumWait``; below a proxy's typical idle timeout).
    public var pullWait: Duration
    /// The delays between attempts while the server is unreachable.
    public var backoff: SyncBackoff
    /// Waits for a duration (the push delay and the backoff); `Task.sleep` unless injected.
    /// It must throw `CancellationError` when its task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// The wall clock ``SyncActivity/offline(_:nextAttempt:failures:)`` times are told in.
    public var now: @Sendable () -> Date
    /// A random number in `0..<1` for the backoff's jitter.
    public var random: @Sendable () -> Double

    /// Creates options; every argument has a default.
    public init(
        pushDelay: Duration = .milliseconds(20), pullWait: Duration = .seconds(25), backoff: SyncBackoff = SyncBackoff(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> Date = { Date() },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.pushDelay = pushDelay
        self.pullWait = pullWait
        self.backoff = backoff
        self.sleep = sleep
        self.now = now
        self.random = random
    }
}

/// The subscribers of one ``RecordSync``'s activity: each gets the current activity first,
/// then every later one, in order.
final class SyncActivityHub: Sendable {
    private struct State {
        var current: SyncActivity = .stopped(nil)
        var next = 0
        var subscribers: [Int: AsyncStream<SyncActivity>.Continuation] = [:]
    }

    private let state = Protected(State())

    var current: SyncActivity { state.withLock { $0.current } }

    func publish(_ activity: SyncActivity) {
        state.withLock { state in
            state.current = activity
            for subscriber in state.subscribers.values { subscriber.yield(activity) }
        }
    }

    func subscribe() -> AsyncStream<SyncActivity> {
        // Unbounded: activities are small and come at most one per round; a tool printing a
        // line per round must not lose one.
        let (stream, continuation) = AsyncStream.makeStream(of: SyncActivity.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state -> Int in
            state.next += 1
            state.subscribers[state.next] = continuation
            continuation.yield(state.current)
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    deinit {
        state.withLock { state in
            for subscriber in state.subscribers.values { subscriber.finish() }
        }
    }
}
