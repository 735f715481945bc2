/// A first-in, first-out turn for a ``FeatureModel``'s operations.
///
/// The model runs on the main actor, which runs other calls while one awaits its loading
/// function; each operation takes the turn first, so refreshes and actions take effect one at
/// a time, in the order they were asked for. Used only on the main actor.
struct FeatureTurns {
    private var isTaken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Takes the turn if it is free; returns false when the caller must ``enqueue(_:)``.
    mutating func takeIfFree() -> Bool {
        if isTaken { return false }
        isTaken = true
        return true
    }

    /// Waits for the turn; ``release()`` resumes waiters one at a time, in order.
    mutating func enqueue(_ waiter: CheckedContinuation<Void, Never>) {
        waiting.append(waiter)
    }

    /// Hands the turn to the next waiter, or frees it.
    mutating func release() {
        if waiting.isEmpty {
            isTaken = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// The tasks a ``FeatureModel`` runs to follow change streams. The model owns the only
/// reference, so when the model is released this is released too and cancels them: a task
/// waiting for the next change of an `AsyncStream` ends at once, and the stream unregisters.
final class FollowerTasks {
    private var tasks: [Task<Void, Never>] = []

    func add(_ task: Task<Void, Never>) {
        tasks.removeAll { $0.isCancelled }
        tasks.append(task)
    }

    func cancelAll() {
        for task in tasks { task.cancel() }
        tasks.removeAll()
    }

    deinit {
        for task in tasks { task.cancel() }
    }
}
