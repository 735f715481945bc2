import Foundation

/// Tells waiting outbox processors that an enqueue committed on this store.
///
/// `StoreCore.performWrite` calls ``notify()`` after the commit of every write transaction
/// that enqueued something. A processor reads ``generation`` before it looks for work and then
/// waits for a newer generation, so a commit between the two is never missed.
///
/// `@unchecked Sendable`: `state` is only touched inside `withLock`, under `lock`.
/// (Synchronization's `Mutex` would need macOS 15 / iOS 18; the package supports earlier.)
final class OutboxSignal: @unchecked Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UUID: (after: UInt64, continuation: CheckedContinuation<Void, Never>)] = [:]
    }

    private let lock = NSLock()
    private var state = State()

    private func withLock<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// The number of enqueue commits so far.
    var generation: UInt64 { withLock { $0.generation } }

    /// Records one enqueue commit and wakes every waiter.
    func notify() {
        let woken = withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            let waiters = state.waiters.values.map(\.continuation)
            state.waiters.removeAll()
            return waiters
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once the generation is past `generation`, or when the task is cancelled.
    func wait(after generation: UInt64) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = withLock { state -> Bool in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = (generation, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume()
        }
    }
}
