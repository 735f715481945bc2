import Foundation

/// The live pulls a server holds, by space: each waits until a change of its space commits,
/// its deadline passes, or its task is cancelled. Shared by every server that holds pulls
/// (``InMemorySyncServer``, `PostgresSyncServer`, the relay), so they wake the same way.
///
/// A waiter registers *before* it pulls, so a change that commits between its empty pull
/// and its wait is not missed: the notification marks the registration, and the wait that
/// follows returns at once.
///
/// ```swift
/// let waiter = waiters.register(space: "alice")
/// let page = try await pull()
/// if page.changes.isEmpty { try await waiters.wait(waiter, until: deadline) } else { waiters.cancel(waiter) }
/// ```
///
/// Waiting holds no thread: a waiter is a continuation, and its deadline a sleeping task.
///
package final class SyncChangeWaiters: Sendable {
    /// One registration: pass it to ``wait(_:until:)`` or ``cancel(_:)``.
    package struct Registration: Sendable, Hashable {
        fileprivate let id: Int
        package let space: String
    }

    private enum Slot {
        /// Registered; not waiting yet.
        case pending
        /// Notified before it waited: the wait returns at once.
        case notified
        case waiting(CheckedContinuation<Void, any Error>, timer: Task<Void, Never>?)
    }

    private struct State {
        var next = 0
        var slots: [Int: Slot] = [:]
        var bySpace: [String: Set<Int>] = [:]

        /// Marks a pending waiter notified, or takes a waiting one out and returns its
        /// continuation.
        mutating func wake(_ id: Int, of space: String) -> CheckedContinuation<Void, any Error>? {
            switch slots[id] {
            case .pending:
                slots[id] = .notified
                return nil
            case .waiting(let continuation, let timer):
                timer?.cancel()
                remove(Registration(id: id, space: space))
                return continuation
            case .notified, nil:
                return nil
            }
        }

        mutating func remove(_ registration: Registration) {
            slots[registration.id] = nil
            bySpace[registration.space]?.remove(registration.id)
            if bySpace[registration.space]?.isEmpty == true { bySpace[registration.space] = nil }
        }
    }

    private let state = Protected(State())

    package init() {}

    /// Registers a waiter of `space`; call before the pull whose emptiness it waits on.
    package func register(space: String) -> Registration {
        state.withLock { state in
            state.next += 1
            let id = state.next
            state.slots[id] = .pending
            state.bySpace[space, default: []].insert(id)
            return Registration(id: id, space: space)
        }
    }

    /// Waits until the space is notified (after ``register(space:)``), `deadline` passes, or
    /// the task is cancelled; the registration is used up either way.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled.
    package func wait(_ registration: Registration, until deadline: ContinuousClock.Instant) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let answer = state.withLock { state -> Result<Void, any Error>? in
                    guard let slot = state.slots[registration.id], case .pending = slot else {
                        // Notified, cancelled or expired before it could wait.
                        let cancelled = state.slots[registration.id] == nil
                        state.remove(registration)
                        return cancelled ? .failure(CancellationError()) : .success(())
                    }
                    let timer = Task { [weak self] in
                        // A cancelled sleep means the waiter was woken first: nothing to do.
                        do { try await Task.sleep(until: deadline, clock: .continuous) } catch { return }
                        self?.finish(registration, with: nil)
                    }
                    state.slots[registration.id] = .waiting(continuation, timer: timer)
                    return nil
                }
                if let answer { continuation.resume(with: answer) }
            }
        } onCancel: {
            finish(registration, with: CancellationError())
        }
    }

    /// A live pull over `pull` (an ordinary pull from a cursor): pulls, and while the page is
    /// empty and `wait` has not passed, waits for a notification of `space` and pulls again
    /// from the page's cursor. The protocol's
    /// ``RecordSyncServer/pull(space:after:limit:collections:wait:)`` for servers that call
    /// ``notify(space:)`` after each commit.
    ///
    /// - Throws: what `pull` throws; ``SyncError/Code/invalidRequest`` for a `wait` out of
    ///   range; `CancellationError` when cancelled while waiting.
    package func livePull(
        space: String, after cursor: SyncCursor, wait: Duration, isolation: isolated (any Actor)? = #isolation,
        _ pull: (SyncCursor) async throws -> SyncPage
    ) async throws -> SyncPage {
        try SyncRequestValidation.validateWait(wait)
        let deadline = ContinuousClock.now.advanced(by: wait)
        var cursor = cursor
        while true {
            let registration = register(space: space)
            let page: SyncPage
            do {
                page = try await pull(cursor)
            } catch {
                cancel(registration)
                throw error
            }
            if !page.changes.isEmpty || page.hasMore || ContinuousClock.now >= deadline {
                cancel(registration)
                return page
            }
            cursor = page.cursor
            try await self.wait(registration, until: deadline)
        }
    }

    /// Drops a registration that will not wait (its pull had changes, or failed).
    package func cancel(_ registration: Registration) {
        finish(registration, with: CancellationError())
    }

    /// Wakes every waiter of `space` (a change of it committed); marks those registered and
    /// not yet waiting, so their wait returns at once.
    package func notify(space: String) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard let ids = state.bySpace[space] else { return [] }
            return ids.compactMap { state.wake($0, of: space) }
        }
        for continuation in woken { continuation.resume() }
    }

    /// Wakes every waiter of every space: after a notification may have been lost (a
    /// listening connection dropped), each pulls again and sees for itself.
    package func notifyAll() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            var woken: [CheckedContinuation<Void, any Error>] = []
            for (space, ids) in state.bySpace {
                for id in ids { if let continuation = state.wake(id, of: space) { woken.append(continuation) } }
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }

    /// The spaces with a waiter registered now (for a server that polls their counters).
    package var spaces: [String] {
        state.withLock { Array($0.bySpace.keys) }
    }

    /// How many waiters are registered now.
    package var count: Int {
        state.withLock { $0.slots.count }
    }

    // MARK: Ending a wait

    /// Ends the registration: a waiting continuation resumes (normally for `nil`: the
    /// deadline passed; throwing `error` otherwise); a pending one is dropped.
    private func finish(_ registration: Registration, with error: (any Error)?) {
        let slot = state.withLock { state in
            let slot = state.slots[registration.id]
            state.remove(registration)
            return slot
        }
        guard case .waiting(let continuation, let timer)? = slot else { return }
        timer?.cancel()
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }
}
