/// A first-in, first-out turn for a repository's operations.
///
/// An actor runs other calls while one awaits the store, so two saves on one repository could
/// interleave and record their versions out of order. Each operation takes the turn before it
/// reads the versions it bases a write on and gives it back when its store call returned, so a
/// repository's operations take effect one at a time, in the order they were called.
struct RepositoryTurns {
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
