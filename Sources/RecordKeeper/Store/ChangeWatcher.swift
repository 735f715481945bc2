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
/// changes, which it checks every ``pollInterval`` while a consumer is parked (only then;
/// one cheap pragma per check). In memory only this store can write, so there is no polling.
///
/// A stream whose next entry was trimmed from the log (it fell more than
/// `ChangeLog.retainedEntries` changes behind) gets a complete resync: one element marked
/// ``RecordChanges/isFullState``, every record of the collection read in one transaction, then
/// the log from there.
///
/// Writers log only while some stream observes the file (`ObserverLock`): a watcher holds the
/// observers' lock, shared, from before it first reads the log until its last stream ends.
///
/// A stream of a file store that does not exist yet (no file, an empty file, or a database
/// being created) starts *before the store*: nothing is created for it, not even the
/// observers' lock file, and a parked consumer checks the path at each poll. The first read
/// that finds a store takes the observers' lock and then delivers every record of the
/// collection as upserts (in key order, in elements of at most ``batchLimit`` records): the
/// store's first commits, merged, which may have run before anyone observed them and so were
/// not logged. From then on it follows the log. A store in a format before the change log
/// (format 1 or 2) is read as having an empty log, which its first write's migration creates.
///
/// `@unchecked Sendable`: `subscribers` and the flags beside it are reached only with `lock`
/// held; `connection`, `observerLock`, `lastDataVersion`, `timer` and `failing` only on `queue`.
final class ChangeWatcher: @unchecked Sendable {
    /// How often a parked consumer's file is checked for commits of other connections.
    static let pollInterval: DispatchTimeInterval = .milliseconds(5)
    /// The most log entries (or, in a resync, records) one element is read from.
    static let batchLimit = 4_096

    private struct Subscriber {
        let collection: String
        /// The last seq delivered; nil until positioned at the end of the log.
        var cursor: Int64?
        /// Positioned before the store existed: the first read delivers every record.
        var beforeStore = false
        /// While delivering every record of a store that did not exist when the stream was
        /// positioned: the key the next page starts after, and the seq to go on from.
        var catchUp: (after: String?, resumeSeq: Int64)?
        var waiting: CheckedContinuation<RecordChanges?, Never>?
    }

    private let path: String?
    private let options: RecordStore.Options
    /// The store's core, for the in-memory connection. Weak: the core owns the watcher.
    weak var core: StoreCore?
    private let queue: DispatchQueue

    private let lock = NSLock()
    private var subscribers: [UUID: Subscriber] = [:]
    private var hasUnpositioned = false

    private var connection: SQLiteConnection?
    /// Set while `connection` is an immutable snapshot of a store whose directory this process
    /// cannot write: what the file looked like, to open it again once it changed.
    private var snapshotStamp: FileStamp?
    /// The observers' lock, held shared while this watcher has streams (file stores only).
    private var observerLock: ObserverLock?
    private var observerLockFailed = false
    private var lastDataVersion: Int64?
    private var timer: (any DispatchSourceTimer)?
    private var failing = false

    init(path: String?, options: RecordStore.Options) {
        self.path = path
        self.options = options
        queue = DispatchQueue(label: "RecordKeeper.ChangeWatcher \(path ?? "in-memory")", qos: .userInitiated)
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: Subscribing

    /// Registers a stream of `collection`, positioned at `cursor` (nil: at the end of the log
    /// when it is first read, by this store's next write or by the watcher, whichever is first).
    func register(_ collection: String, cursor: Int64?) -> UUID {
        let id = UUID()
        locked {
            subscribers[id] = Subscriber(collection: collection, cursor: cursor)
            if cursor == nil { hasUnpositioned = true }
        }
        return id
    }

    /// Positions stream `id` at the end of the log now, reading it through the watcher's own
    /// connection (opening it if needed), or before the store when there is none yet. Blocks
    /// until done: call on the store's executor only. A failure is reported and leaves the
    /// stream to be positioned at its first read.
    func positionNow(_ id: UUID) {
        queue.sync {
            do {
                let end = try withEngine { try Self.logBounds($0).last }
                failing = false
                locked {
                    guard subscribers[id]?.cursor == nil, subscribers[id]?.beforeStore == false else { return }
                    if let end { subscribers[id]?.cursor = end } else { subscribers[id]?.beforeStore = true }
                }
            } catch {
                report(error)
            }
        }
    }

    /// Ends a stream: a parked consumer gets nil; the connection closes with the last stream.
    func unregister(_ id: UUID) {
        let (waiting, isLast) = locked { () -> (CheckedContinuation<RecordChanges?, Never>?, Bool) in
            let waiting = subscribers.removeValue(forKey: id)?.waiting
            return (waiting, subscribers.isEmpty)
        }
        waiting?.resume(returning: nil)
        if isLast {
            queue.async { [self] in
                guard locked({ subscribers.isEmpty }) else { return }
                stopTimer()
                connection = nil
                snapshotStamp = nil
                lastDataVersion = nil
                observerLock?.release()
                observerLock = nil
            }
        }
    }

    /// The store was released. In memory nothing can write any more: every stream ends. A file
    /// may still be written by others, so its streams go on.
    func storeReleased() {
        guard path == nil else { return }
        let waiting = locked { () -> [CheckedContinuation<RecordChanges?, Never>] in
            let waiting = subscribers.values.compactMap(\.waiting)
            subscribers.removeAll()
            return waiting
        }
        for continuation in waiting { continuation.resume(returning: nil) }
    }

    /// Returns once the work queued so far on the watcher's queue is done (for tests).
    func waitUntilIdleForTesting() {
        queue.sync {}
    }

    /// True while any stream is registered (in memory, writes log only then).
    var hasSubscribers: Bool { locked { !subscribers.isEmpty } }

    func count(_ collection: String) -> Int {
        locked { subscribers.values.count { $0.collection == collection } }
    }

    /// How many streams of `collection` have a consumer parked, waiting for a change.
    func waitingCount(_ collection: String) -> Int {
        locked { subscribers.values.count { $0.collection == collection && $0.waiting != nil } }
    }

    // MARK: Hooks of this store's writes (called with the store's lock held)

    /// Positions streams registered before this write at the end of the log, so that they
    /// deliver the write (streams positioned before the store existed deliver every record
    /// anyway). Call inside the write transaction, before it logs anything.
    func positionNewStreams(_ engine: RecordEngine) throws {
        guard locked({ hasUnpositioned }) else { return }
        let end = try engine.changeLogBounds().last
        locked {
            for (id, subscriber) in subscribers where subscriber.cursor == nil && !subscriber.beforeStore {
                subscribers[id]?.cursor = end
            }
            hasUnpositioned = false
        }
    }

    /// Serves parked consumers after a commit of this store, without waiting for a poll.
    func committed() {
        guard locked({ !subscribers.isEmpty }) else { return }
        queue.async { [self] in serveParked() }
    }

    // MARK: Consuming

    /// The next element of stream `id`, waiting for one; nil when the stream ended.
    func next(_ id: UUID) async -> RecordChanges? {
        await withCheckedContinuation { continuation in
            queue.async { [self] in pull(id, continuation) }
        }
    }

    /// On `queue`: delivers what the log holds for `id`, or parks the consumer.
    private func pull(_ id: UUID, _ continuation: CheckedContinuation<RecordChanges?, Never>) {
        guard locked({ subscribers[id] != nil }) else { return continuation.resume(returning: nil) }
        if timer == nil, path != nil {
            // Before reading, so that a commit after the read changes it.
            lastDataVersion = readDataVersion()
        }
        if let change = serve(id) { return continuation.resume(returning: change) }
        let parked = locked { () -> Bool in
            guard subscribers[id] != nil else { return false }
            subscribers[id]?.waiting = continuation
            return true
        }
        guard parked else { return continuation.resume(returning: nil) }
        startTimerIfNeeded()
    }

    /// On `queue`: serves every parked consumer that has something to read.
    private func serveParked() {
        let parked = locked { subscribers.compactMap { $0.value.waiting == nil ? nil : $0.key } }
        for id in parked {
            guard let change = serve(id) else { continue }
            let waiting = locked { () -> CheckedContinuation<RecordChanges?, Never>? in
                defer { subscribers[id]?.waiting = nil }
                return subscribers[id]?.waiting
            }
            waiting?.resume(returning: change)
        }
        if locked({ !subscribers.values.contains { $0.waiting != nil } }) { stopTimer() }
    }

    /// On `queue`: the next non-empty element of `id`, advancing its position; nil when there
    /// is none yet (or reading failed: reported, and tried again at the next change).
    private func serve(_ id: UUID) -> RecordChanges? {
        guard let subscriber = locked({ subscribers[id] }) else { return nil }
        do {
            let read = try withEngine { engine in try Self.read(subscriber, engine) }
            failing = false
            guard let (change, updated) = read else {
                // No store yet (file stores): a stream not positioned yet starts before it.
                if path != nil, subscriber.cursor == nil {
                    locked { if subscribers[id]?.cursor == nil { subscribers[id]?.beforeStore = true } }
                }
                return nil
            }
            locked {
                guard subscribers[id] != nil else { return }
                subscribers[id]?.cursor = updated.cursor
                subscribers[id]?.beforeStore = updated.beforeStore
                subscribers[id]?.catchUp = updated.catchUp
            }
            return change.isEmpty ? nil : change
        } catch {
            report(error)
            return nil
        }
    }

    /// Reads the next element of `subscriber` in one read transaction; returns it with the
    /// subscriber's new position.
    private static func read(_ subscriber: Subscriber, _ engine: RecordEngine) throws -> (RecordChanges, Subscriber) {
        try engine.begin(immediate: false)
        do {
            let result = try readInTransaction(subscriber, engine)
            try engine.commit()
            return result
        } catch {
            try engine.rollback(after: error)
            throw error
        }
    }

    private static func readInTransaction(_ subscriber: Subscriber, _ engine: RecordEngine) throws -> (RecordChanges, Subscriber) {
        var updated = subscriber
        var change = RecordChanges()
        let collection = subscriber.collection
        let (first, last) = try logBounds(engine)
        if updated.beforeStore {
            // The store's first commits may have run before anyone observed them: deliver the
            // records themselves, then the log from here (logged from now on: the observers'
            // lock is held).
            updated.beforeStore = false
            updated.catchUp = (nil, last)
        }
        if let catchUp = updated.catchUp {
            let page = try engine.page(collection, after: catchUp.after, limit: batchLimit) ?? []
            for record in page { change[record.key] = record.data }
            if page.count < batchLimit {
                updated.catchUp = nil
                updated.cursor = catchUp.resumeSeq
            } else {
                updated.catchUp = (page.last?.key, catchUp.resumeSeq)
            }
            return (change, updated)
        }
        guard let cursor = subscriber.cursor else {
            updated.cursor = last
            return (change, updated)
        }
        if cursor > last || (first.map { cursor + 1 < $0 } ?? false) {
            // Fell behind the trimmed log (or the file was replaced): the whole collection, as
            // one full state read in this transaction, then the log from here.
            change = RecordChanges(fullState: try engine.readAll(collection) ?? [:])
            updated.cursor = last
            return (change, updated)
        }
        let logged = try engine.loggedKeys(collection, after: cursor, limit: batchLimit)
        for key in logged.keys {
            change[key] = try engine.record(collection, key: key)?.data
        }
        updated.cursor = logged.full ? (logged.last ?? last) : max(cursor, last)
        return (change, updated)
    }

    /// The log's bounds; (nil, 0) for a store whose format has no log yet (formats 1 and 2:
    /// the first write's migration creates it, and its first entry is seq 1).
    private static func logBounds(_ engine: RecordEngine) throws -> (first: Int64?, last: Int64) {
        guard try engine.hasChangeLog() else { return (nil, 0) }
        return try engine.changeLogBounds()
    }

    // MARK: Connection and polling (on `queue`)

    /// Runs `body` with the connection streams read from: the watcher's own for a file (opened
    /// on first need, once the file is a store), the store's for an in-memory store. Nil, without
    /// running `body`, while there is no store (no file, an empty file, a database being
    /// created; in memory: not open yet).
    private func withEngine<T>(_ body: (RecordEngine) throws -> T) throws -> T? {
        guard let path else {
            guard let core else { return nil }
            return try core.locked { state in
                guard let connection = state.connection else { return nil }
                return try body(RecordEngine(connection: connection, path: nil, operation: .changes))
            }
        }
        guard let connection = try openConnection(path) else { return nil }
        return try body(RecordEngine(connection: connection, path: path, operation: .changes))
    }

    /// Takes the observers' lock (shared) before reading the log, so that from now on every
    /// writer logs. A failure is reported; the stream then sees writers that log anyway.
    private func claimObserverLock() {
        guard observerLock == nil, !observerLockFailed, let path else { return }
        do {
            let lock = try ObserverLock(storePath: path)
            try lock.lockShared()
            observerLock = lock
        } catch {
            observerLockFailed = true
            options.eventHandler?(.changeObservationFailed(error.storeError))
        }
    }

    /// The watcher's reader of the store at `path`, opened as reads open it: it never creates,
    /// migrates or changes anything. Nil while there is no store yet; the observers' lock is
    /// taken (creating its file beside the store) only once a file is there, before reading it.
    ///
    /// A store whose directory this process cannot write is read through an immutable snapshot
    /// (see `ReadTarget.snapshot`), kept while the file stays as it was and opened again when it
    /// changed (the next poll then serves every parked consumer).
    private func openConnection(_ path: String) throws -> SQLiteConnection? {
        if let connection {
            guard let stamp = snapshotStamp, !stamp.isCurrent(path) else { return connection }
            self.connection = nil
            snapshotStamp = nil
            lastDataVersion = nil
        }
        guard try StoreOpener.readHeader(path) != nil else { return nil }
        claimObserverLock()
        switch try StoreOpener.openForReading(path: path, options: options) {
        case .store(let opened):
            connection = opened
        case .snapshot(let opened, let stamp):
            connection = opened
            snapshotStamp = stamp
        case .notAStore:
            return nil
        }
        return connection
    }

    /// The file's data version now; nil while there is no store or when it cannot be read
    /// (reported): then every poll looks again.
    private func readDataVersion() -> Int64? {
        do {
            guard let version = try withEngine({ try $0.dataVersion() }) else { return nil }
            failing = false
            return version
        } catch {
            report(error)
            return nil
        }
    }

    private func startTimerIfNeeded() {
        guard timer == nil, path != nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.pollInterval, repeating: Self.pollInterval, leeway: .milliseconds(1))
        timer.setEventHandler { [weak self] in self?.poll() }
        timer.resume()
        self.timer = timer
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }

    private func poll() {
        let version = readDataVersion()
        guard version == nil || version != lastDataVersion else { return }
        if let version { lastDataVersion = version }
        serveParked()
    }

    /// Reports a failure to read the log once per run of failures, through the store's event
    /// handler: a stream has no error channel, and the failure must not pass silently.
    private func report(_ error: any Error) {
        guard !failing else { return }
        failing = true
        options.eventHandler?(.changeObservationFailed(Self.storeError(error, path: path)))
    }

    /// `error` as the store error to report, with the operation "changes".
    static func storeError(_ error: any Error, path: String?) -> RecordStoreError {
        if let error = error as? RecordStoreError { return error }
        if let failure = error as? SQLiteFailure { return RecordStoreError(failure, operation: .changes, path: path) }
        return RecordStoreError(code: .sqlite, operation: .changes, path: path, detail: "\(error)")
    }
}
