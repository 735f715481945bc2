import Foundation

/// Runs blocking `body` (a socket call, waiting for a process) on a thread of its own and
/// returns its result.
///
/// Not on `DispatchQueue.global()`: on Linux Swift's cooperative pool drains on the same few
/// Dispatch worker threads, so while other suites' tasks keep that pool busy (a `waitUntil`
/// yielding in a loop), work queued there may never run, and a test waiting for it hangs.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}

/// The same, for a body that cannot fail.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: body())
        }
        thread.start()
    }
}
