import Foundation

/// Tells waiting outbox processors that an enqueue committed on this store.
///
/// `OutboxCommitObserver` calls ``notify()`` after the commit of every write transaction
/// that enqueued something. A processor reads ``generation`` before it looks for work and then
/// waits for a newer generation, so a commit between the two is never missed.
final class OutboxSignal: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    /// Waiters in an array, with ids from a counter: every store builds a signal, and a
    /// `[UUID: …]` dictionary literal made the runtime look up `UUID: Hashable` in every
    /// loaded image when the store was created (a tenth of a millisecond of a cold open), and
    /// each wait read random bytes for its id. A processor or two wait at a time.
    private struct State {
        var generation: UInt64 = 0
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []

        mutating func remove(_ id: UInt64) -> Waiter? {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return waiters.remove(at: index)
        }
    }

    private let state = Protected(State())

    /// The number of enqueue commits so far.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Records one enqueue commit and wakes every waiter.
    func notify() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            let waiters = state.waiters.map(\.continuation)
            state.waiters.removeAll()
            return waiters
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once the generation is past `generation`, or when the task is cancelled.
    func wait(after generation: UInt64) async {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.remove(id) }
            waiter?.continuation.resume()
        }
    }
}
