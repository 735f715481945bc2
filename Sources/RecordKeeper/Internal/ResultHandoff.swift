import Foundation

/// One waiter's result, delivered once: by the work it waits for or by the waiter's own
/// cancellation, whichever comes first.
///
/// It lets a caller stop waiting for work that others still need (a shared opening, a network
/// request that must not be cancelled) without stopping the work itself: the waiter's
/// cancellation resumes only this waiter, with `CancellationError`.
///
/// `@unchecked Sendable`: `continuation`, `early` and `done` are only touched under `lock`.
final class ResultHandoff<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, any Error>?
    private var early: Result<Value, any Error>?
    private var done = false

    /// Waits for ``finish(_:)``, or throws `CancellationError` as soon as the calling task is
    /// cancelled (at once when it already is).
    func value() async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { install($0) }
        } onCancel: {
            finish(.failure(CancellationError()))
        }
    }

    /// Delivers `result` to the waiter unless a result was already delivered. A result that
    /// comes before the waiter's continuation exists is kept until it does.
    func finish(_ result: Result<Value, any Error>) {
        lock.lock()
        guard !done else {
            lock.unlock()
            return
        }
        guard let continuation else {
            if early == nil { early = result }
            lock.unlock()
            return
        }
        done = true
        self.continuation = nil
        lock.unlock()
        continuation.resume(with: result)
    }

    private func install(_ continuation: CheckedContinuation<Value, any Error>) {
        lock.lock()
        if let early {
            done = true
            lock.unlock()
            continuation.resume(with: early)
            return
        }
        self.continuation = continuation
        lock.unlock()
    }
}
