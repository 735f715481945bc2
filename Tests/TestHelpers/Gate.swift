import Foundation

/// A one-shot gate: tasks wait on it until a test opens it. The handshake tests use instead of
/// sleeping ("wait until the other side got here").
public actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var cancellableWaiters: [UUID: CheckedContinuation<Void, any Error>] = [:]

    public init() {}

    /// Returns once the gate is open (at once if it already is).
    public func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Returns once the gate is open, or throws `CancellationError` when the waiting task is
    /// cancelled first (for a stand-in of something cancellable, like a sleep).
    public func waitUnlessCancelled() async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if isOpen {
                    continuation.resume()
                } else if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    cancellableWaiters[id] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func cancelWaiter(_ id: UUID) {
        cancellableWaiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }

    /// Opens the gate for every waiter, present and future.
    public func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
        for waiter in cancellableWaiters.values { waiter.resume() }
        cancellableWaiters.removeAll()
    }

    /// Whether the gate has been opened.
    public var opened: Bool { isOpen }
}

/// A gate a synchronous body (a transaction running on the store's thread) can wait on and a
/// test can open, with a signal the other way: "I have arrived".
///
/// `@unchecked Sendable`: all state is behind `condition`'s lock.
public final class BlockingGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false
    private var hasArrived = false
    private var arrivalWaiters: [CheckedContinuation<Void, Never>] = []

    public init() {}

    /// Called by the body: says it arrived, then blocks its thread until the gate opens.
    public func arriveAndWait() {
        arrive()
        condition.lock()
        while !isOpen { condition.wait() }
        condition.unlock()
    }

    /// Called by the body: says it arrived and goes on without waiting.
    public func arrive() {
        condition.lock()
        hasArrived = true
        let waiters = arrivalWaiters
        arrivalWaiters.removeAll()
        condition.unlock()
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the body has arrived at the gate.
    public func arrival() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if hasArrived {
                condition.unlock()
                continuation.resume()
            } else {
                arrivalWaiters.append(continuation)
                condition.unlock()
            }
        }
    }

    /// Lets the body go on.
    public func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }
}
