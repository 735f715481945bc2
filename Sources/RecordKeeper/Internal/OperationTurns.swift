/// A first-in, first-out turn for the operations of one actor (a repository, a sync client, a
/// feature model on the main actor).
///
/// An actor runs other calls while one awaits, so two saves on one repository could interleave
/// and record their versions out of order. Each operation takes the turn before it reads the
/// state it bases a write on and gives it back when its awaited call returned, so the
/// operations take effect one at a time, in the order they were called. Used only from its
/// owner's isolation.
package struct OperationTurns {
    package init() {}

    private var isTaken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Takes the turn if it is free; returns false when the caller must ``enqueue(_:)``.
    package mutating func takeIfFree() -> Bool {
        if isTaken { return false }
        isTaken = true
        return true
    }

    /// Waits for the turn; ``release()`` resumes waiters one at a time, in order.
    package mutating func enqueue(_ waiter: CheckedContinuation<Void, Never>) {
        waiting.append(waiter)
    }

    /// Hands the turn to the next waiter, or frees it.
    package mutating func release() {
        if waiting.isEmpty {
            isTaken = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
