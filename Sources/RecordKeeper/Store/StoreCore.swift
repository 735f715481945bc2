import Dispatch
import Foundation

/// The store's connections and the state its requests share, and the synchronous request
/// bodies that run with them.
///
/// Each connection is a `SerializedConnection`: its state, its lock and its serial queue as
/// one type. A third connection, `checkpointer`, only runs scheduled checkpoints.
/// - the **writer** (`writer`, `CoreState`): opened by the first write, which creates the file
///   and migrates the format. Writes, transactions, and every request of an in-memory store.
///   Its queue is the store's executor (`RecordStore` runs there too).
/// - the **readers** (`readers`, a `ReaderPool` of `ReadState`s) of a file store: every read
///   outside a write transaction, beside the writer. An in-memory store has none: its reads
///   run on the writer.
///
/// Where requests run (see `RecordStore.execute` and `Concurrency.md`):
/// - inline, on the caller's executor (`nonisolated(nonsending)`), for short requests only:
///   point reads on a reader (opening it first if that is quick), and small writes when
///   commits do not `fsync` (never opening the writer). Only when the
///   connection's lock is free at that moment, and with SQLite's busy handler off: a lock held
///   by another connection fails the attempt at once (SQLITE_BUSY; a write rolls back, having
///   written nothing) and the request goes to the connection's queue, where waiting is fine
///   (`SerializedConnection.attemptInline`). Automatic checkpoints are off, so no commit ever
///   copies the log into the main file or `fsync`s there.
/// - on the writer's queue: writes that may wait, transactions, opening, checkpoints
///   (passive, scheduled when the log grows past `checkpointThreshold` frames, on the
///   checkpointer so they never hold the writer; truncating, on the writer, on `close()`), and
///   every other request of an in-memory store;
/// - on a reader's queue: the other reads of a file store.
///
/// Connections are opened in SQLite's multi-thread mode, where any thread may use a
/// connection, one at a time. Lock order: the writer before the readers and the checkpointer,
/// never the other way; the file generation last.
final class StoreCore: Sendable {
    let path: String?
    /// Set when the store was created with a URL that is not a file URL: every opening, of
    /// the writer and of a reader, throws it instead of using `path`.
    let locationError: RecordStoreError?
    let options: RecordStore.Options
    /// The writer and what goes with it; its queue is the store's executor.
    let writer: SerializedConnection<CoreState>
    /// The readers of a file store; nil for an in-memory store, whose reads run on the writer.
    let readers: ReaderPool?
    /// Whether no commit `fsync`s (``Durability/normal``, or in memory): only then may a small
    /// write run inline on a caller's thread.
    let commitsWithoutSync: Bool
    /// Makes the observers of the store's write transactions (see `TransactionObserver`).
    private let makeObservers: @Sendable () -> [any TransactionObserver]
    /// See `fileWasReplaced()`.
    private let fileGeneration = Protected(0)
    /// The connection scheduled checkpoints run on, so that they never hold the writer: a
    /// save arriving meanwhile runs at once. With the file generation it opened.
    private let checkpointer = Protected(CheckpointerState())

    /// Frames in the log after which a commit schedules a passive checkpoint (SQLite's own
    /// automatic checkpoint uses the same figure).
    static let checkpointThreshold = 1000

    init(
        path: String?, options: RecordStore.Options, label: String, locationError: RecordStoreError? = nil,
        observers makeObservers: @escaping @Sendable () -> [any TransactionObserver]
    ) {
        self.path = path
        self.locationError = locationError
        self.options = options
        self.writer = SerializedConnection(CoreState(), label: label)
        self.readers = path == nil ? nil : ReaderPool(label: label)
        self.commitsWithoutSync = path == nil || options.durability == .normal
        self.makeObservers = makeObservers
    }

    /// The store's executor: the writer's queue.
    var executor: DatabaseExecutor { writer.executor }

    /// Whether the writer is open.
    var isOpen: Bool { writer.withLock { $0.connection != nil } }

    /// Closes every connection after a truncating checkpoint, so the main file holds every
    /// commit and the log is empty. The next request opens them again. A checkpoint that finds
    /// another connection busy for longer than the busy timeout is skipped (nothing is lost);
    /// any other failure is reported to the event handler.
    func close(waitingForLocks: Bool = true) {
        // An in-memory store's records live in its one connection: closing it would lose
        // them (and its streams' positions in its log). It keeps them until it is released.
        guard path != nil else { return }
        writer.withLock { state in
            Self.releaseBetweenTransactions(state)
            readers?.closeAll()
            checkpointer.withLock { $0.connection = nil }
            if let connection = state.connection {
                let failure = waitingForLocks
                    ? Self.truncateLog(connection) : connection.refusingToWait { Self.truncateLog(connection) }
                if let failure {
                    options.eventHandler?(.checkpointFailed(RecordStoreError(failure, operation: .close, path: path)))
                }
            }
            state.dropConnection()
        }
    }

    /// `RecordStore.removeIfEmpty`'s work, with the writer's lock held.
    func removeIfEmpty(_ state: CoreState, _ remove: () -> Void) throws -> Bool {
        guard let connection = state.connection, let path else { return false }
        let engine = RecordEngine(connection: connection, path: path, operation: .collections)
        try engine.beginWrite()
        let empty: Bool
        do {
            empty = try engine.records.collections().isEmpty
            if empty {
                // Every other connection of this store closes first, while this one keeps the
                // file open: none of them is the file's last, which is the one SQLite lets
                // remove the `-wal` and `-shm` by their paths.
                Self.releaseBetweenTransactions(state)
                readers?.closeAll()
                checkpointer.withLock { $0.connection = nil }
                try engine.runner.run { try connection.keepLogFilesOnClose() }
            }
        } catch {
            try engine.rollback(after: error)
            throw error
        }
        if empty { remove() }
        // Closed whether or not the rollback succeeds: its files are gone.
        defer { if empty { state.dropConnection() } }
        try engine.runner.run { try connection.rollback() }
        return empty
    }

    /// The truncating checkpoint of `close`; its failure, if any: an error, or other
    /// connections' transactions that kept it from finishing (SQLite's "busy").
    private static func truncateLog(_ connection: SQLiteConnection) -> SQLiteFailure? {
        do throws(SQLiteFailure) {
            if try connection.checkpoint(.truncate) { return nil }
            return SQLiteFailure(
                code: ResultCode.busy.rawValue,
                message: "other connections' transactions kept the log from being emptied; its commits stay in it")
        } catch {
            return error
        }
    }
}

/// What `StoreCore`'s writer lock guards. Not `Sendable`: only reached with the lock held.
final class CoreState {
    var connection: SQLiteConnection?
    /// The identity of the store file when the connection opened it (nil in memory).
    var fileIdentity: StoreFileIdentity?
    /// Says when the path may name another file since the identity was read (nil where
    /// nothing watches it: every commit checks the path).
    var pathWatch: StorePathWatch?
    var failNextCommit = false
    /// The observers of write transactions, made by the first write (see `StoreCore.observers`).
    var observers: [any TransactionObserver]?

    /// The log size (frames) at which the next commit schedules a checkpoint.
    var nextCheckpointAt = StoreCore.checkpointThreshold
    /// A checkpoint is scheduled on the executor and has not run yet.
    var checkpointScheduled = false
    /// A release of what observers keep between transactions is scheduled (`scheduleRelease`).
    var releaseScheduled = false
    /// How long after a commit that release runs (tests lengthen it to see what is kept).
    var releaseDelay = ChangeLogObserver.lingerInterval
    /// Forgets the connection (closing it); the next request opens the store again.
    func dropConnection() {
        connection = nil
        fileIdentity = nil
        pathWatch = nil
    }
}

/// What `StoreCore`'s checkpointer lock guards: the connection scheduled checkpoints run on
/// (opened by the first), with the file generation it opened. A class, not an optional tuple:
/// the runtime builds the metadata of `Protected<(connection:generation:)?>` from its mangled
/// name on a store's first use, which took about 50 µs of a cold open (W5).
final class CheckpointerState {
    var connection: SQLiteConnection?
    var generation = 0
}

/// What `StoreCore`'s reader lock guards. Not `Sendable`: only reached with the lock held.
final class ReadState {
    /// The reader, once the file is known to be a store.
    var connection: SQLiteConnection?
    /// `StoreCore.fileGeneration` when the reader opened.
    var fileGeneration = 0
}

/// What a read request reads from.
enum ReadSource {
    /// A store: its reader (or, in memory, its one connection).
    case store(RecordEngine)
    /// No store (yet): no file, an empty file, or an SQLite database without the store's
    /// format (with a connection to it, for this request only). Reads answer "no records".
    case notAStore(SQLiteConnection?)

    var engine: RecordEngine? {
        if case .store(let engine) = self { engine } else { nil }
    }
}

extension StoreCore {
    /// Runs one request on the writer, with tracing. Call with the lock held.
    ///
    /// With `refuseWaiting` (an inline attempt) the busy handler is off, and a lock held by
    /// another connection throws `InlineAttemptRefused` instead of a failure.
    func perform<T>(
        _ state: CoreState, _ operation: StoreOperation, collection: String?, refuseWaiting: Bool = false,
        _ body: (RecordEngine) throws -> T
    ) throws -> T {
        guard let connection = state.connection else {
            throw RecordStoreError(
                code: .misuse, operation: operation, collection: collection, path: path,
                detail: "the store's connection was closed during the request")
        }
        let engine = RecordEngine(connection: connection, path: path, operation: operation)
        return try traced(operation, collection: collection, on: connection, refuseWaiting: refuseWaiting) {
            try body(engine)
        }
    }

    /// Runs `body` (with the busy handler off when `refuseWaiting`), reporting it to the
    /// event handler. A refused inline attempt is not reported: the request runs again.
    ///
    /// Without a handler nothing is timed: an optional start instant made the first request of
    /// every process build `Optional<ContinuousClock.Instant>`'s metadata at run time (40 µs
    /// of a cold open), and every request read the clock for nobody.
    func traced<T>(
        _ operation: StoreOperation, collection: String?, on connection: SQLiteConnection?, refuseWaiting: Bool,
        _ body: () throws -> T
    ) throws -> T {
        try Task.checkCancellation()
        guard let handler = options.eventHandler else {
            return try run(on: connection, refuseWaiting: refuseWaiting, body)
        }
        let start = ContinuousClock.now
        do {
            let result = try run(on: connection, refuseWaiting: refuseWaiting, body)
            handler(.request(operation: operation, collection: collection, duration: .now - start, succeeded: true))
            return result
        } catch let refused as InlineAttemptRefused {
            throw refused  // not a failed request: it runs again on an executor
        } catch {
            handler(.request(operation: operation, collection: collection, duration: .now - start, succeeded: false))
            throw error
        }
    }

    /// Runs `body`, with the busy handler off when `refuseWaiting`: then a busy database is
    /// `InlineAttemptRefused`.
    private func run<T>(
        on connection: SQLiteConnection?, refuseWaiting: Bool, _ body: () throws -> T
    ) throws -> T {
        do {
            return if refuseWaiting, let connection { try connection.refusingToWait(body) } else { try body() }
        } catch let error as RecordStoreError where refuseWaiting && error.code == .busy {
            throw InlineAttemptRefused()
        }
    }

    /// Runs one read of a file store on the reader, opening it first if needed. Call with the
    /// reader's lock held. With `refuseWaiting` (an inline attempt) it never waits for a lock
    /// (`InlineAttemptRefused` instead), and answers nil when the reader is not open and
    /// opening it might take long.
    func performRead<T>(
        _ readState: ReadState, _ operation: StoreOperation, collection: String?, refuseWaiting: Bool = false,
        _ body: (ReadSource) throws -> T
    ) throws -> T? {
        guard let path else { return nil }
        if let locationError { throw locationError }
        let generation = currentFileGeneration()
        if readState.connection != nil, readState.fileGeneration != generation { readState.connection = nil }
        if readState.connection == nil {
            // An inline attempt opens the reader too (a few file reads, never a wait for a
            // lock), unless SQLite might first have to rebuild the index of a large log.
            if refuseWaiting, !StoreOpener.opensQuickly(path) { return nil }
            let target: ReadTarget
            do {
                target = try StoreOpener.openForReading(path: path, options: options, refuseWaiting: refuseWaiting)
            } catch let error as RecordStoreError where refuseWaiting && error.code == .busy {
                throw InlineAttemptRefused()
            }
            switch target {
            case .store(let connection):
                readState.connection = connection
                readState.fileGeneration = generation
            case .snapshot(let connection, let stamp):
                // Not kept: another request opens the file again and sees what changed.
                let result = try traced(operation, collection: collection, on: connection, refuseWaiting: refuseWaiting) {
                    try body(.store(RecordEngine(connection: connection, path: path, operation: operation)))
                }
                guard stamp.isCurrent(path) else {
                    throw RecordStoreError(
                        code: .busy, operation: operation, collection: collection, path: path,
                        detail: "the store changed while it was read without locks (this process may not write it or its directory); read again")
                }
                return result
            case .notAStore(let glance):
                return try traced(operation, collection: collection, on: glance, refuseWaiting: refuseWaiting) {
                    try body(.notAStore(glance))
                }
            }
        }
        guard let connection = readState.connection else { return nil }
        let engine = RecordEngine(connection: connection, path: path, operation: operation)
        return try traced(operation, collection: collection, on: connection, refuseWaiting: refuseWaiting) {
            try body(.store(engine))
        }
    }

    /// Counts the times the writer found the store file replaced (under a lock of its own:
    /// the reader must not wait for the writer's lock, which a running write holds).
    private func currentFileGeneration() -> Int {
        fileGeneration.withLock { $0 }
    }

    /// Makes the reader open the file now at the path before its next read.
    func fileWasReplaced() {
        fileGeneration.withLock { $0 += 1 }
    }

    /// Runs `body` in one immediate write transaction: commit on success; on any error,
    /// cancellation or injected failure, roll back and rethrow so nothing of it persists.
    /// Its changes go to the change log in the same transaction; streams are told after the commit.
    /// Call with the lock held.
    func performWrite<T>(
        _ state: CoreState, _ operation: StoreOperation, collection: String?, refuseWaiting: Bool = false,
        origin: TransactionOrigin = .library, _ body: (WriteContext) throws -> T
    ) throws -> T {
        do {
            let result = try perform(state, operation, collection: collection, refuseWaiting: refuseWaiting) {
                engine -> T in
                try engine.beginWrite()
                let context = WriteContext(
                    engine: engine, origin: origin, observers: observers(state), fileIdentity: state.fileIdentity)
                do {
                    for observer in context.observers { try observer.transactionDidBegin(context) }
                    let result = try body(context)
                    try context.finish()
                    for observer in context.observers { try observer.transactionWillCommit(context) }
                    try Task.checkCancellation()
                    if state.failNextCommit {
                        state.failNextCommit = false
                        throw RecordStoreError(
                            code: .injectedFailure, operation: operation, collection: collection, path: path)
                    }
                    try checkFileIdentity(state, operation, collection: collection)
                    try engine.commit()
                    for observer in context.observers { observer.transactionDidCommit(context) }
                    return result
                } catch {
                    defer { for observer in context.observers { observer.transactionDidRollBack(context) } }
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
            scheduleCheckpointIfDue(state)
            scheduleReleaseIfNeeded(state)
            return result
        } catch var error as RecordStoreError {
            // SQLite opens a file it cannot write read-only instead of failing. Drop that
            // connection so the next request opens the file afresh, read-write once it is
            // writable again.
            if error.code == .readOnly { state.dropConnection() }
            // A failure of the transaction as a whole (its start waiting past the busy
            // timeout, its commit on a full disk) is still a failure of this request's
            // collection, which the message names.
            if error.collection == nil { error.collection = collection }
            throw error
        }
    }

    /// Asks the observers to let go of what they keep between transactions (the observers'
    /// lock: `ChangeLogObserver`) `CoreState.releaseDelay` from now, when some
    /// observer keeps something and no release is scheduled yet. The release runs off the
    /// store's executor, between transactions (with the writer's lock, never waiting for it: a
    /// running transaction moves it to later). Call with the lock held.
    private func scheduleReleaseIfNeeded(_ state: CoreState) {
        guard !state.releaseScheduled, let observers = state.observers,
            observers.contains(where: \.holdsBetweenTransactions)
        else { return }
        state.releaseScheduled = true
        scheduleRelease(after: state.releaseDelay)
    }

    /// Where the releases run: a serial queue of the library's own, not a global queue. A
    /// global queue's threads are a pool of about one per core that an app may hold, every one
    /// blocked (a semaphore, a synchronous call); a release waiting for one of them kept every
    /// other store's and process's change streams waiting for the lock as long
    /// (`ObserverLockLingerTests`). A queue made with `DispatchQueue(label:)` gets a thread
    /// whatever the others do, and each release is short and never waits.
    private static let releaseQueue = DispatchQueue(label: "RecordKeeper.ObserversLockRelease")

    private func scheduleRelease(after delay: Duration) {
        Self.releaseQueue.asyncAfter(deadline: .now() + delay.seconds) {
            [weak self] in
            guard let self else { return }
            let ran: Void? = writer.withLockIfAvailable { state in
                state.releaseScheduled = false
                Self.releaseBetweenTransactions(state)
            }
            if ran == nil { scheduleRelease(after: delay) }  // a transaction runs: later
        }
    }

    /// Makes every observer let go of what it keeps between transactions. Call with the lock
    /// held, between transactions.
    static func releaseBetweenTransactions(_ state: CoreState) {
        for observer in state.observers ?? [] { observer.releaseBetweenTransactions() }
    }

    /// Lets go of what the observers keep between transactions now (the observers' lock), so
    /// that a stream starting now need not wait for it.
    func releaseBetweenTransactions() {
        writer.withLock { Self.releaseBetweenTransactions($0) }
    }

    /// ``releaseBetweenTransactions()`` when no transaction runs, without waiting: a running
    /// one releases at its end (the store is suspended: see `ChangeLogObserver`).
    func releaseBetweenTransactionsIfIdle() {
        _ = writer.withLockIfAvailable { Self.releaseBetweenTransactions($0) }
    }

    /// The store's transaction observers, made by the first write (so that a store only read
    /// never builds them). Call with the lock held.
    private func observers(_ state: CoreState) -> [any TransactionObserver] {
        if let observers = state.observers { return observers }
        let observers = makeObservers()
        state.observers = observers
        return observers
    }

    /// Throws `fileReplaced` (and drops the connection, so the next request opens the file now
    /// at the path) when the store file is no longer the one the connection opened: a commit
    /// would go to a deleted or replaced file and be lost. The path is examined only when its
    /// watch cannot vouch that nothing on it changed (see `StorePathWatch`).
    private func checkFileIdentity(_ state: CoreState, _ operation: StoreOperation, collection: String?) throws {
        guard let path, let opened = state.fileIdentity else { return }
        if let watch = state.pathWatch, watch.isUnchanged() { return }
        guard let current = StoreFileIdentity.replacement(of: opened, at: path) else { return }
        state.dropConnection()
        fileWasReplaced()
        throw RecordStoreError(
            code: .fileReplaced, operation: operation, collection: collection, path: path,
            detail: current == .missing ? "the file is gone" : "another file is at the path now")
    }

    /// Schedules a passive checkpoint on the store's executor when the log has grown past the
    /// threshold since the last one: checkpoints never run inside a caller's commit.
    private func scheduleCheckpointIfDue(_ state: CoreState) {
        guard let frames = state.connection?.walFrames else { return }
        if frames < Self.checkpointThreshold {
            state.nextCheckpointAt = Self.checkpointThreshold  // the log was reset
            return
        }
        guard frames >= state.nextCheckpointAt, !state.checkpointScheduled else { return }
        // If readers keep the log from being reset, wait for another threshold's worth.
        state.nextCheckpointAt = frames + Self.checkpointThreshold
        state.checkpointScheduled = true
        executor.run { [self] in
            writer.withLock { $0.checkpointScheduled = false }
            runPassiveCheckpoint()
        }
    }

    /// A passive checkpoint on the checkpointing connection (opened on first use): it copies
    /// what it can without waiting for any lock and without holding the writer's.
    private func runPassiveCheckpoint() {
        guard let path else { return }
        checkpointer.withLock { checkpointer in
            let generation = currentFileGeneration()
            do throws(SQLiteFailure) {
                if checkpointer.connection == nil || checkpointer.generation != generation {
                    checkpointer.connection = nil
                    let connection = try SQLiteConnection(
                        path: path, busyTimeout: options.busyTimeout, mode: .readWrite,
                        protectionFlag: options.fileProtection.sqliteOpenFlag)
                    // Checkpoints sync the main file: as the store's durability says.
                    try connection.setDurability(full: options.durability == .full)
                    // A connection learns the file is in WAL mode on its first read; until
                    // then a checkpoint does nothing.
                    _ = try connection.header()
                    checkpointer.connection = connection
                    checkpointer.generation = generation
                }
                try checkpointer.connection?.checkpoint(.passive)
            } catch {
                checkpointer.connection = nil
                options.eventHandler?(.checkpointFailed(RecordStoreError(error, operation: .checkpoint, path: path)))
            }
        }
    }
}
