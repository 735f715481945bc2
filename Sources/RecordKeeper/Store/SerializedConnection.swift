/// One SQLite connection with its state and the serial queue its blocking work runs on, as
/// one type (GRDB's `SerializedDatabase` is the model). A store has one of them as its writer
/// and a small pool of them as its readers (`ReaderPool`); an in-memory store has the writer
/// alone.
///
/// The state (`CoreState`, `ReadState`: the connection and what goes with it) is reached only
/// with the connection's lock held, so no two threads ever use the connection at once. Work
/// reaches it in one of three ways:
/// - ``run(_:)``, on the connection's queue (an actor on a `DatabaseExecutor`, so SQLite's
///   blocking calls never hold one of Swift's cooperative threads). Where waiting is fine.
/// - ``attemptInline(_:)``, on the caller's thread, only when the lock is free at that moment
///   and the attempt itself refuses to wait (it throws `InlineAttemptRefused` instead: see
///   `StoreCore`). It never waits, so it is the only way a caller's thread uses a connection.
/// - ``withLock(_:)``, waiting for the lock on the calling thread: for the connection's own
///   queue (an actor sharing the executor, like `RecordStore` with its writer) and for short
///   bookkeeping that holds no SQLite call (`close()`, "is it open").
actor SerializedConnection<State: AnyObject> {
    /// The serial queue of this connection's blocking work.
    nonisolated let executor: DatabaseExecutor
    private nonisolated let state: Protected<State>

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// A connection state on `executor` (the writer shares its executor with `RecordStore`, so
    /// the store's actor-isolated work and the writer's run in one serial order).
    init(_ state: sending State, executor: DatabaseExecutor) {
        self.executor = executor
        self.state = Protected(state)
    }

    /// A connection state on a serial queue of its own, named `label` (and `number`).
    init(_ state: sending State, label: String, number: Int? = nil) {
        self.init(state, executor: DatabaseExecutor(label: label, number: number))
    }

    /// Runs `body` with the state, waiting for the lock on the calling thread.
    @inline(__always)
    nonisolated func withLock<T>(_ body: (State) throws -> T) rethrows -> T {
        try state.withLock { try body($0) }
    }

    /// Runs `body` with the state if the lock is free now; nil (without running it) otherwise.
    @inline(__always)
    nonisolated func withLockIfAvailable<T>(_ body: (State) throws -> T) rethrows -> T? {
        try state.withLockIfAvailable { try body($0) }
    }

    /// Runs `body` on this connection's queue with the lock held, in the calling task (so a
    /// cancellation reaches SQLite's progress handler).
    func run<T: Sendable>(_ body: @Sendable (State) throws -> T) throws -> T {
        try state.withLock { try body($0) }
    }

    /// The inline fast path: runs `body` on the caller's thread if the lock is free now.
    ///
    /// `.busy` when the lock is held; `.declined` when `body` answers nil (it cannot serve the
    /// request inline: the connection is not open, or opening it might take long) or throws
    /// `InlineAttemptRefused` (SQLite found a lock of another connection; nothing was
    /// written). The caller then sends the request to ``run(_:)``. Any other error is the
    /// request's answer.
    @inline(__always)
    nonisolated func attemptInline<T>(_ body: (State) throws -> T?) -> InlineAttempt<T> {
        // The answer leaves through a local, not as the lock's generic result: `Protected` is in
        // another module, and a result of a generic type would cross it through value witnesses
        // on every point read.
        var attempt = InlineAttempt<T>.busy
        state.withLockIfAvailable { state in
            do {
                attempt = try body(state).map { .done(.success($0)) } ?? .declined
            } catch is InlineAttemptRefused {
                attempt = .declined
            } catch {
                attempt = .done(.failure(error))
            }
        }
        return attempt
    }
}

/// What became of an inline attempt (see `SerializedConnection.attemptInline(_:)`).
enum InlineAttempt<T> {
    /// It ran: its answer, success or failure.
    case done(Result<T, any Error>)
    /// The connection's lock was held: another connection of a pool may be free.
    case busy
    /// It did not run, or ran and wrote nothing: the request goes to a queue.
    case declined

    /// The answer when it ran; nil when the request goes to a queue.
    var result: Result<T, any Error>? {
        if case .done(let result) = self { result } else { nil }
    }
}

/// A refused inline attempt: the lock it needed was held by another connection. Nothing was
/// written; the request goes to the connection's queue instead.
struct InlineAttemptRefused: Error {}
