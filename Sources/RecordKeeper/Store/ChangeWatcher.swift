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
/// `ChangeLog.retainedEntries` changes behind) gets a complete resync: every record of the
/// collection as an upsert, in key order and in elements of at most ``batchLimit`` records,
/// then the log from where the resync began.
///
/// Writers log only while some stream observes the file (`ObserverLock`): a watcher holds the
/// observers' lock, shared, from before it first reads the log until its last stream ends.
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
        /// While resyncing: the key the next page starts after, and the seq to go on from.
        var resync: (after: String?, resumeSeq: Int64)?
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
    /// connection (opening it if needed). Blocks until done: call on the store's executor only.
    /// A failure is reported and leaves the stream to be positioned at its first read.
    func positionNow(_ id: UUID) {
        queue.sync {
            do {
                guard let end = try withEngine({ try $0.changeLogBounds().last }) else { return }
                failing = false
                locked {
                    if subscribers[id]?.cursor == nil { subscribers[id]?.cursor = end }
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
    /// deliver the write. Call inside the write transaction, before it logs anything.
    func positionNewStreams(_ engine: RecordEngine) throws {
        guard locked({ hasUnpositioned }) else { return }
        let end = try engine.changeLogBounds().last
        locked {
            for (id, subscriber) in subscribers where subscriber.cursor == nil { subscribers[id]?.cursor = end }
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
            guard let (change, updated) = read else { return nil }
            locked {
                guard subscribers[id] != nil else { return }
                subscribers[id]?.cursor = updated.cursor
                subscribers[id]?.resync = updated.resync
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
        let (first, last) = try engine.changeLogBounds()
        guard let cursor = subscriber.cursor else {
            updated.cursor = last
            return (change, updated)
        }
        if updated.resync == nil, cursor > last || (first.map { cursor + 1 < $0 } ?? false) {
            // Fell behind the trimmed log (or the file was replaced): resync from the records.
            updated.resync = (nil, last)
        }
        if let resync = updated.resync {
            let page = try engine.page(collection, after: resync.after, limit: batchLimit) ?? []
            for record in page { change[record.key] = record.data }
            if page.count < batchLimit {
                updated.resync = nil
                updated.cursor = resync.resumeSeq
            } else {
                updated.resync = (page.last?.key, resync.resumeSeq)
            }
            return (change, updated)
        }
        let logged = try engine.loggedKeys(collection, after: cursor, limit: batchLimit)
        for key in logged.keys {
            change[key] = try engine.record(collection, key: key)?.data
        }
        updated.cursor = logged.full ? (logged.last ?? last) : max(cursor, last)
        return (change, updated)
    }

    // MARK: Connection and polling (on `queue`)

    /// Runs `body` with the connection streams read from: the watcher's own for a file (opened
    /// on first need), the store's for an in-memory store (nil while it is not open).
    private func withEngine<T>(_ body: (RecordEngine) throws -> T) throws -> T? {
        guard path != nil else {
            guard let core else { return nil }
            return try core.locked { state in
                guard let connection = state.connection else { return nil }
                return try body(RecordEngine(connection: connection, path: nil, operation: .changes))
            }
        }
        claimObserverLock()
        let connection = try openConnection()
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

    private func openConnection() throws -> SQLiteConnection {
        if let connection { return connection }
        let (opened, _) = try StoreOpener.open(path: path, options: options)
        connection = opened
        return opened
    }

    /// The file's data version now; nil when it cannot be read (reported).
    private func readDataVersion() -> Int64? {
        do {
            let version = try openConnection().withStatement("PRAGMA data_version") { statement in
                try statement.step() ? statement.int64(at: 0) : 0
            }
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
