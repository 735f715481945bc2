import Dispatch
import Foundation

/// Delivers the change log (`ChangeLog`) to a store's change streams: commits of this store,
/// of other `RecordStore` instances on the same file and of other processes alike.
///
/// A stream holds no changes itself, only its position in the log (the last seq it delivered),
/// so a consumer that does not read costs nothing however much is written meanwhile. When the
/// consumer asks for the next element, the watcher reads, on its own serial queue (never the
/// cooperative pool) and in one read transaction, the keys of the stream's collection logged
/// after that position (at most ``batchLimit`` entries) and each key's current payload
/// (absent: a removal): latest wins, and one element may merge several commits.
///
/// A consumer that waits is parked. It is served again at once when this store commits
/// (`committed()`), and otherwise when `PRAGMA data_version` of the watcher's own connection
/// changes, which it checks when its signal (`StoreChangeSignal`, in
/// `ChangeWatcher+Waking.swift`) wakes it: an event source where the platform has one (inotify
/// on Linux, Darwin notifications and a `-wal` source on Apple platforms) with an adaptive poll
/// behind it, or the adaptive poll alone. Nothing wakes while no consumer waits but events,
/// which cost one pragma each. In memory only this store can write: nothing is watched.
///
/// A stream whose next entry was trimmed from the log (it fell more than
/// `ChangeLog.retainedEntries` changes behind) gets a complete resync: one element marked
/// ``RecordChanges/isFullState``, every record of the collection read in one transaction, then
/// the log from there. So does every stream after a suspension during which the file changed
/// (`suspend()`, `resume()`).
///
/// Writers log only while some stream observes the file (`ObserverLock`): a watcher holds the
/// observers' lock, shared, from before it first reads the log until its last stream ends or
/// the store suspends observation.
///
/// A stream of a file store that does not exist yet (no file, an empty file, or a database
/// being created) starts *before the store*: nothing is created for it, not even the
/// observers' lock file, and a waiting consumer checks the path when woken. The first read
/// that finds a store takes the observers' lock and then delivers every record of the
/// collection as upserts (in key order, in elements of at most ``batchLimit`` records): the
/// store's first commits, merged, which may have run before anyone observed them and so were
/// not logged. From then on it follows the log. A store in a format before the change log
/// (format 1 or 2) is read as having an empty log, which its first write's migration creates.
///
/// Its connection is a `SerializedConnection` of a `WatcherState` (the SQLite connection, the
/// observers' lock, the signal, the data version, the suspension state), made when first
/// needed, so a store that is never observed builds none of it: reached only with that
/// connection's lock held, on its queue, where every read, wake-up and suspension runs. The
/// streams (`Streams`) sit in a `Protected`. Lock order: the connection's lock, then (in
/// memory, `withEngine`) the store's writer lock, then the streams' lock; the hooks of the
/// store's writes, called with the writer lock held, take only the streams' lock.
final class ChangeWatcher: Sendable {
    /// The most log entries (or, in a resync, records) one element is read from.
    static let batchLimit = 4_096

    struct Subscriber {
        let collection: String
        /// The last seq delivered; nil until positioned at the end of the log.
        var cursor: Int64?
        /// Positioned before the store existed: the first read delivers every record.
        var beforeStore = false
        /// While delivering every record of a store that did not exist when the stream was
        /// positioned: the key the next page starts after, and the seq to go on from.
        var catchUp: (after: String?, resumeSeq: Int64)?
        /// The next element is the whole collection (a full state): the file changed while
        /// observation was suspended, when writers may not have logged.
        var needsFullState = false
        var waiting: CheckedContinuation<RecordChanges?, Never>?
    }

    /// What `streams` guards: the streams, and the watcher's connection once made.
    struct Streams {
        /// `Dictionary()`, not `[:]`: no metadata is built for the type until a first
        /// subscriber (see `SQLiteConnection.queryStatements`).
        var subscribers: [UUID: Subscriber] = Dictionary()
        var hasUnpositioned = false
        /// Streams registered so far: a failure to take the observers' lock is tried again by
        /// the next stream registered after it.
        var registrations = 0
        /// The watcher's connection, made by its first use (see `connection()`).
        var connection: SerializedConnection<WatcherState>?
        /// The store's core, for the in-memory connection. Weak: the core owns the watcher.
        weak var core: StoreCore?
        /// Observation is suspended (or being suspended): this store's writes keep no lock
        /// after their commit (see `ChangeLogObserver`).
        var suspended = false
    }

    let path: String?
    let options: RecordStore.Options
    private let streams = Protected(Streams())

    init(path: String?, options: RecordStore.Options) {
        self.path = path
        self.options = options
    }

    /// Whether observation is suspended, for the store's writes (read under the streams' lock,
    /// which a write's hooks may take).
    var isSuspended: Bool { locked { $0.suspended } }

    /// Sets what ``isSuspended`` says (by `suspend()` and `resume()`).
    func markSuspended(_ suspended: Bool) {
        locked { $0.suspended = suspended }
    }

    /// The store's core, which an in-memory store's streams read from. Set once, by the store.
    func attach(_ core: StoreCore) {
        streams.withLock { $0.core = core }
    }

    /// Runs `body` with the streams, holding their lock (never while taking another).
    private func locked<T>(_ body: (inout Streams) throws -> T) rethrows -> T {
        try streams.withLock(body)
    }

    /// The watcher's connection, made now if it was not: by the first stream (or suspension),
    /// not with the store, so that a store that is never observed builds none of its types,
    /// its queue or its state.
    func connection() -> SerializedConnection<WatcherState> {
        locked { streams in
            if let connection = streams.connection { return connection }
            let connection = SerializedConnection(
                WatcherState(core: streams.core), label: "RecordKeeper.ChangeWatcher \(path ?? "in-memory")")
            streams.connection = connection
            return connection
        }
    }

    /// The connection if it was made (with none, there is nothing to stop or serve).
    var existingConnection: SerializedConnection<WatcherState>? { locked { $0.connection } }

    /// Runs `body` with the connection's state on its queue, after the work queued before.
    func enqueue(_ body: @escaping @Sendable (WatcherState) -> Void) {
        let connection = connection()
        connection.executor.run { connection.withLock(body) }
    }

    /// Runs `body` with the connection's state on its queue, after the work queued before, and
    /// waits for it: never from the queue itself.
    func onQueue<T>(_ body: (WatcherState) throws -> T) rethrows -> T {
        let connection = connection()
        return try connection.executor.sync { try connection.withLock(body) }
    }

    // MARK: Subscribing

    /// Registers a stream of `collection`, positioned at `cursor` (nil: at the end of the log
    /// when it is first read, by this store's next write or by the watcher, whichever is first).
    func register(_ collection: String, cursor: Int64?) -> UUID {
        let id = UUID()
        locked { streams in
            streams.subscribers[id] = Subscriber(collection: collection, cursor: cursor)
            streams.registrations += 1
            if cursor == nil { streams.hasUnpositioned = true }
        }
        return id
    }

    /// Positions stream `id` at the end of the log now, reading it through the watcher's own
    /// connection (opening it if needed), or before the store when there is none yet. Blocks
    /// until done: call on the store's executor only. A failure is reported and leaves the
    /// stream to be positioned at its first read. While observation is suspended nothing is
    /// read: the stream is positioned when it resumes.
    func positionNow(_ id: UUID) {
        onQueue { state in
            guard !state.suspended else { return }
            do {
                let end = try withEngine(state) { try Self.logBounds($0).last }
                state.failing = false
                locked { streams in
                    guard streams.subscribers[id]?.cursor == nil, streams.subscribers[id]?.beforeStore == false else {
                        return
                    }
                    if let end { streams.subscribers[id]?.cursor = end } else { streams.subscribers[id]?.beforeStore = true }
                }
            } catch {
                report(error, state)
            }
        }
    }

    /// Ends a stream: a parked consumer gets nil; the connection closes with the last stream.
    func unregister(_ id: UUID) {
        let (waiting, isLast) = locked { streams -> (CheckedContinuation<RecordChanges?, Never>?, Bool) in
            let waiting = streams.subscribers.removeValue(forKey: id)?.waiting
            return (waiting, streams.subscribers.isEmpty)
        }
        waiting?.resume(returning: nil)
        // Without a connection there is nothing to close.
        guard isLast, existingConnection != nil else { return }
        enqueue { [self] state in
            guard locked({ $0.subscribers.isEmpty }) else { return }
            stopSignal(state)
            state.connection = nil
            state.connectionIdentity = nil
            state.snapshotStamp = nil
            state.lastDataVersion = nil
            state.observerLock?.release()
            state.observerLock = nil
            state.serveFailing = false  // the next stream's failed reads are reported again
        }
    }

    /// The store was closed: drops the watcher's SQLite connection, which holds a shared lock
    /// on the log index (`-shm`) even between transactions; the next read opens it again.
    /// Streams stay registered. While suspended, this forgets what the file looked like at the
    /// suspension, so `resume()` gives every stream a full state.
    func closeConnection() {
        guard path != nil, existingConnection != nil else { return }
        onQueue { state in
            state.connection = nil
            state.connectionIdentity = nil
            state.snapshotStamp = nil
            state.lastDataVersion = nil
            state.versionAtSuspension = nil
            state.stampAtSuspension = nil
        }
    }

    /// The store was released. In memory nothing can write any more: every stream ends. A file
    /// may still be written by others, so its streams go on.
    func storeReleased() {
        guard path == nil else { return }
        endInMemoryStreams()
    }

    /// Apart from `storeReleased` and never inlined into it: the optimizer built this body's
    /// generic types (an array of continuations, the dictionary's values) before the
    /// `path == nil` test, making every file store's release pay a runtime type look-up of
    /// about 0.3 ms.
    @inline(never)
    private func endInMemoryStreams() {
        let waiting = locked { streams -> [CheckedContinuation<RecordChanges?, Never>] in
            let waiting = streams.subscribers.values.compactMap(\.waiting)
            streams.subscribers.removeAll()
            return waiting
        }
        for continuation in waiting { continuation.resume(returning: nil) }
    }

    /// Returns once the work queued so far on the watcher's queue is done (for tests).
    func waitUntilIdleForTesting() {
        existingConnection?.executor.sync {}
    }

    /// True while any stream is registered (in memory, writes log only then).
    var hasSubscribers: Bool { locked { !$0.subscribers.isEmpty } }
    /// Streams registered so far (see `Streams.registrations`).
    var registrations: Int { locked { $0.registrations } }

    /// True while some consumer is parked.
    var hasWaiting: Bool { locked { $0.subscribers.values.contains { $0.waiting != nil } } }

    func count(_ collection: String) -> Int {
        locked { $0.subscribers.values.count { $0.collection == collection } }
    }

    /// Marks every stream that follows the log (or is about to) for a full state.
    func requireFullState() {
        locked { streams in
            for (id, subscriber) in streams.subscribers where !subscriber.beforeStore {
                streams.subscribers[id]?.needsFullState = true
                streams.subscribers[id]?.catchUp = nil
            }
        }
    }

    /// How many streams of `collection` have a consumer parked, waiting for a change.
    func waitingCount(_ collection: String) -> Int {
        locked { $0.subscribers.values.count { $0.collection == collection && $0.waiting != nil } }
    }

    // MARK: Hooks of this store's writes (called with the store's lock held)

    /// Positions streams registered before this write at the end of the log, so that they
    /// deliver the write (streams positioned before the store existed deliver every record
    /// anyway). Call inside the write transaction, before it logs anything.
    func positionNewStreams(_ engine: RecordEngine) throws {
        guard locked({ $0.hasUnpositioned }) else { return }
        let end = try engine.changeLog.bounds().last
        locked { streams in
            for (id, subscriber) in streams.subscribers where subscriber.cursor == nil && !subscriber.beforeStore {
                streams.subscribers[id]?.cursor = end
            }
            streams.hasUnpositioned = false
        }
    }

    /// Serves parked consumers after a commit of this store, without waiting for a signal.
    /// Takes only the streams' lock here (never the connection's, which may be held by a read
    /// waiting for the store's lock): the serving is queued.
    func committed() {
        guard locked({ !$0.subscribers.isEmpty }) else { return }
        serveParkedLater()
    }

    /// Apart from `committed`, which every commit calls: the connection's generic types are
    /// built only here, for a store that has streams.
    @inline(never)
    private func serveParkedLater() {
        // No connection yet: no consumer asked for an element, so none is parked.
        guard existingConnection != nil else { return }
        enqueue { [self] state in serveParked(state) }
    }

    // MARK: Consuming

    /// The next element of stream `id`, waiting for one; nil when the stream ended.
    func next(_ id: UUID) async -> RecordChanges? {
        await withCheckedContinuation { continuation in
            enqueue { [self] state in pull(state, id, continuation) }
        }
    }

    /// On the connection's queue: delivers what the log holds for `id`, or parks the consumer.
    private func pull(_ state: WatcherState, _ id: UUID, _ continuation: CheckedContinuation<RecordChanges?, Never>) {
        guard locked({ $0.subscribers[id] != nil }) else { return continuation.resume(returning: nil) }
        if !state.suspended {
            if path != nil, !hasWaiting {
                // Before reading, so that a commit after the read changes it. (While others
                // wait, the version is theirs to compare: a change they have not been served
                // must not be taken as seen.)
                state.lastDataVersion = readDataVersion(state)
            }
            if let change = serve(id, state) { return continuation.resume(returning: change) }
        }
        let parked = locked { streams -> Bool? in
            guard streams.subscribers[id] != nil else { return false }
            // One consumer at a time: a second task iterating the same stream while the first
            // waits would otherwise drop the first one's continuation, and that task would
            // hang for good.
            guard streams.subscribers[id]?.waiting == nil else { return nil }
            streams.subscribers[id]?.waiting = continuation
            return true
        }
        guard let parked else {
            preconditionFailure("a change stream is iterated by two tasks at once; iterate each stream from one task")
        }
        guard parked else { return continuation.resume(returning: nil) }
        consumersWaitingChanged(state)
    }

    /// On the connection's queue: serves every parked consumer that has something to read.
    func serveParked(_ state: WatcherState) {
        guard !state.suspended else { return }
        let parked = locked { $0.subscribers.compactMap { $0.value.waiting == nil ? nil : $0.key } }
        for id in parked {
            guard let change = serve(id, state) else { continue }
            let waiting = locked { streams -> CheckedContinuation<RecordChanges?, Never>? in
                defer { streams.subscribers[id]?.waiting = nil }
                return streams.subscribers[id]?.waiting
            }
            waiting?.resume(returning: change)
        }
        consumersWaitingChanged(state)
    }

    /// On the connection's queue: the next non-empty element of `id`, advancing its position;
    /// nil when there is none yet (or reading failed: reported, and tried again at the next
    /// change).
    private func serve(_ id: UUID, _ state: WatcherState) -> RecordChanges? {
        guard let subscriber = locked({ $0.subscribers[id] }) else { return nil }
        do {
            if state.failServesForTesting > 0 {
                state.failServesForTesting -= 1
                throw RecordStoreError(code: .injectedFailure, operation: .changes, path: path, detail: "a read failed on purpose")
            }
            let read = try withEngine(state) { engine in try Self.read(subscriber, engine) }
            state.failing = false
            state.serveFailing = false
            guard let (change, updated) = read else {
                // No store yet (file stores): a stream not positioned yet starts before it,
                // and delivers every record once there is one (nothing to resync from).
                if path != nil, subscriber.cursor == nil {
                    locked { streams in
                        if streams.subscribers[id]?.cursor == nil {
                            streams.subscribers[id]?.beforeStore = true
                            streams.subscribers[id]?.needsFullState = false
                        }
                    }
                }
                return nil
            }
            locked { streams in
                guard streams.subscribers[id] != nil else { return }
                streams.subscribers[id]?.cursor = updated.cursor
                streams.subscribers[id]?.beforeStore = updated.beforeStore
                streams.subscribers[id]?.catchUp = updated.catchUp
                streams.subscribers[id]?.needsFullState = updated.needsFullState
            }
            return change.isEmpty ? nil : change
        } catch {
            // Reported once per run of failed reads: the data version read before each retry
            // succeeds, and must not make every retry a new report.
            if !state.serveFailing { report(error, state) }
            state.serveFailing = true
            return nil
        }
    }
}

/// What the watcher's connection lock guards (see `ChangeWatcher`). Not `Sendable`: only
/// reached with the lock held, on the connection's queue.
final class WatcherState {
    /// The store's core, for the in-memory connection. Weak: the core owns the watcher.
    weak var core: StoreCore?
    /// The watcher's own connection to the file (nil in memory, and until the file is a store).
    var connection: SQLiteConnection?
    /// Set while `connection` is an immutable snapshot of a store whose directory this process
    /// cannot write: what the file looked like, to open it again once it changed.
    var snapshotStamp: FileStamp?
    /// The file the connection opened (its identity names its Darwin notifications).
    var connectionIdentity: StoreFileIdentity?
    /// The observers' lock, held shared while this watcher has streams (file stores only).
    var observerLock: ObserverLock?
    /// `Streams.registrations` when taking the observers' lock last failed: the streams
    /// registered since try again (one that failed once, out of file descriptors, need not
    /// fail for good).
    var observerLockFailedAt: Int?
    var lastDataVersion: Int64?
    /// `ChangeWatcher.failServesForTesting(_:)`.
    var failServesForTesting = 0
    /// The last read of the log for a stream failed: each check tries again until one succeeds.
    var serveFailing = false
    /// What wakes waiting consumers (see `ChangeWatcher+Waking.swift`), and what it was made
    /// for: the file's identity then, and whether it has an event source.
    var signal: (any StoreChangeSignal)?
    var signalIdentity: StoreFileIdentity?
    var signalHasEvents = false
    /// Observation is suspended (see `ChangeWatcher.suspend()`): no lock, no signal, no reads.
    var suspended = false
    /// The file's data version (or snapshot stamp) when observation was suspended.
    var versionAtSuspension: Int64?
    var stampAtSuspension: FileStamp?
    /// A failure to read was reported, and nothing has been read since (see `report`).
    var failing = false

    init(core: StoreCore?) {
        self.core = core
    }
}
