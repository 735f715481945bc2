import Foundation

/// The store's connection and the state its requests share, behind one lock, and the
/// synchronous request bodies that run while holding it.
///
/// Requests run in one of two places, always with the lock held for the whole request:
/// - on the store's own serial executor (a dispatch queue): opening, whole-collection reads,
///   bulk writes, commits that `fsync`, transactions and snapshots;
/// - inline, on the caller's executor (the functions are `nonisolated(nonsending)`), for short requests only (point reads; small writes when
///   commits do not `fsync`) and only when the lock is free at that moment. They take a few
///   microseconds, the time a thread hop to the executor would cost twice over.
///
/// `@unchecked Sendable`: `state` is only reached inside `locked` / `lockedIfFree`, so no two
/// threads ever use it, or the SQLite connection in it, at the same time. The connection is
/// opened in SQLite's multi-thread mode, where any thread may use it, one at a time.
final class StoreCore: @unchecked Sendable {
    let path: String?
    let options: RecordStore.Options
    private let lock = NSLock()
    private let state = CoreState()
    /// Delivers the change log to this store's change streams.
    let watcher: ChangeWatcher
    /// Wakes outbox processors after a commit that enqueued operations.
    let outboxSignal = OutboxSignal()

    init(path: String?, options: RecordStore.Options) {
        self.path = path
        self.options = options
        watcher = ChangeWatcher(path: path, options: options)
        watcher.core = self
    }

    deinit {
        watcher.storeReleased()
    }

    /// Runs `body` with the state, waiting for the lock.
    func locked<T>(_ body: (CoreState) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(state)
    }

    /// Runs `body` with the state if the lock is free now; nil (without running it) otherwise.
    func lockedIfFree<T>(_ body: (CoreState) throws -> T) rethrows -> T? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body(state)
    }
}

/// What `StoreCore`'s lock guards. Not `Sendable`: only reached with the lock held.
final class CoreState {
    var connection: SQLiteConnection?
    /// The identity of the store file when the connection opened it (nil in memory).
    var fileIdentity: StoreFileIdentity?
    var failNextCommit = false
    /// The observers' lock of a file store (see `ObserverLock`), opened by the first write.
    var observerLock: ObserverLock?
    var observerLockUnavailable = false

    /// Forgets the connection (closing it); the next request opens the store again.
    func dropConnection() {
        connection = nil
        fileIdentity = nil
    }
}

extension StoreCore {
    /// Runs one request on the open connection, with tracing. Call with the lock held.
    func perform<T>(
        _ state: CoreState, _ operation: StoreOperation, collection: String?, _ body: (RecordEngine) throws -> T
    ) throws -> T {
        guard let connection = state.connection else {
            throw RecordStoreError(
                code: .misuse, operation: operation, collection: collection, path: path,
                detail: "the store's connection was closed during the request")
        }
        try Task.checkCancellation()
        let engine = RecordEngine(connection: connection, path: path, operation: operation)
        guard let handler = options.eventHandler else { return try body(engine) }
        let start = ContinuousClock.now
        do {
            let result = try body(engine)
            handler(.request(operation: operation, collection: collection, duration: .now - start, succeeded: true))
            return result
        } catch {
            handler(.request(operation: operation, collection: collection, duration: .now - start, succeeded: false))
            throw error
        }
    }

    /// Runs `body` in one immediate write transaction: commit on success; on any error,
    /// cancellation or injected failure, roll back and rethrow so nothing of it persists.
    /// Its changes go to the change log in the same transaction; streams are told after the commit.
    /// Call with the lock held.
    func performWrite<T>(
        _ state: CoreState, _ operation: StoreOperation, collection: String?, _ body: (WriteContext) throws -> T
    ) throws -> T {
        do {
            let result = try perform(state, operation, collection: collection) { engine -> T in
                try engine.begin(immediate: true)
                let unobserved = claimUnobserved(state)
                defer { if unobserved { state.observerLock?.release() } }
                let context = WriteContext(engine: engine, logsChanges: !unobserved)
                do {
                    try watcher.positionNewStreams(engine)
                    let result = try body(context)
                    try context.finish()
                    try Task.checkCancellation()
                    if state.failNextCommit {
                        state.failNextCommit = false
                        throw RecordStoreError(
                            code: .injectedFailure, operation: operation, collection: collection, path: path)
                    }
                    try checkFileIdentity(state, operation, collection: collection)
                    try engine.commit()
                    if context.enqueuedOperations { outboxSignal.notify() }
                    return result
                } catch {
                    do {
                        try engine.rollback(after: error)
                    } catch {
                        // The connection's state is unknown: drop it, the next request reopens.
                        state.dropConnection()
                        throw error
                    }
                    throw error
                }
            }
            watcher.committed()
            return result
        } catch let error as RecordStoreError where error.code == .readOnly {
            // SQLite opens a file it cannot write read-only instead of failing. Drop that
            // connection so the next request opens the file afresh, read-write once it is
            // writable again.
            state.dropConnection()
            throw error
        }
    }

    /// True when no change stream of any connection observes the store, holding the observers'
    /// lock exclusively until the transaction ends (see `ObserverLock`); false when the
    /// transaction must log its changes. Call with the lock held, inside the write transaction.
    private func claimUnobserved(_ state: CoreState) -> Bool {
        guard let path else { return !watcher.hasSubscribers }  // in memory, only this store
        if state.observerLock == nil, !state.observerLockUnavailable {
            do {
                state.observerLock = try ObserverLock(storePath: path)
            } catch {
                // Not a failure of the write: without the lock file it logs every change.
                state.observerLockUnavailable = true
            }
        }
        return state.observerLock?.lockIfUnobserved() ?? false
    }

    /// Throws `fileReplaced` (and drops the connection, so the next request opens the file now
    /// at the path) when the store file is no longer the one the connection opened: a commit
    /// would go to a deleted or replaced file and be lost.
    private func checkFileIdentity(_ state: CoreState, _ operation: StoreOperation, collection: String?) throws {
        guard let path, let opened = state.fileIdentity else { return }
        let current = StoreFileIdentity.lookup(path)
        guard current != .file(opened), current != .unknown else { return }
        state.dropConnection()
        throw RecordStoreError(
            code: .fileReplaced, operation: operation, collection: collection, path: path,
            detail: current == .missing ? "the file is gone" : "another file is at the path now")
    }
}
