import Foundation

/// Runs blocking `body` (a socket call, waiting for a process) on a thread of its own and
/// returns its result.
///
/// Not on `DispatchQueue.global()`: on Linux Swift's cooperative pool drains on the same few
/// Dispatch worker threads, so while other suites' tasks keep that pool busy (a `waitUntil`
/// yielding in a loop), work queued there may never run, and a test waiting for it hangs.
///
/// The result travels through a lock rather than the continuation alone: ThreadSanitizer did
/// not see the continuation's resumption order the thread's writes (a `RawConnection` built on
/// the thread) before the task's reads of them, and reported a race; the lock's release and
/// acquire are an order it sees.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let handoff = Handoff<Result<T, any Error>>()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let thread = Thread {
            handoff.put(Result { try body() })
            continuation.resume()
        }
        thread.start()
    }
    return try handoff.take().get()
}

/// The same, for a body that cannot fail.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    let handoff = Handoff<T>()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let thread = Thread {
            handoff.put(body())
            continuation.resume()
        }
        thread.start()
    }
    return handoff.take()
}

/// One value passed from a thread to the task that waited for it, under an `NSLock`.
///
/// `@unchecked Sendable`: `value` is only read and written with `lock` held.
private final class Handoff<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value?

    func put(_ newValue: Value) {
        lock.lock()
        value = newValue
        lock.unlock()
    }

    /// The value put; called only after the thread has put it (the continuation resumed).
    func take() -> Value {
        lock.lock()
        defer { lock.unlock() }
        guard let value else { preconditionFailure("onOwnThread's result was taken before the thread put it") }
        return value
    }
}
