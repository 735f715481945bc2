import Foundation

/// How the watcher reads: its connection to the file, the observers' lock it takes before
/// reading the log, and the read of one stream's next element.
extension ChangeWatcher {
    /// Reads the next element of `subscriber` in one read transaction; returns it with the
    /// subscriber's new position.
    static func read(_ subscriber: Subscriber, _ engine: RecordEngine) throws -> (RecordChanges, Subscriber) {
        return try engine.readTransaction {
            let result = try readInTransaction(subscriber, engine)
            return result
        }
    }

    private static func readInTransaction(_ subscriber: Subscriber, _ engine: RecordEngine) throws -> (RecordChanges, Subscriber) {
        var updated = subscriber
        var change = RecordChanges()
        let collection = subscriber.collection
        let (first, last) = try logBounds(engine)
        if updated.needsFullState {
            // The file changed while observation was suspended, when writers may not have
            // logged: the whole collection, as one full state read in this transaction, then
            // the log from here.
            updated.needsFullState = false
            updated.catchUp = nil
            change = RecordChanges(fullState: try engine.records.readAll(collection) ?? [:])
            updated.cursor = last
            return (change, updated)
        }
        if updated.beforeStore {
            // The store's first commits may have run before anyone observed them: deliver the
            // records themselves, then the log from here (logged from now on: the observers'
            // lock is held).
            updated.beforeStore = false
            updated.catchUp = (nil, last)
        }
        if let catchUp = updated.catchUp {
            let page = try engine.records.page(collection, after: catchUp.after, limit: batchLimit) ?? []
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
            change = RecordChanges(fullState: try engine.records.readAll(collection) ?? [:])
            updated.cursor = last
            return (change, updated)
        }
        let logged = try engine.changeLog.loggedKeys(collection, after: cursor, limit: batchLimit)
        for key in logged.keys {
            change[key] = try engine.records.payload(collection, key: key)
        }
        updated.cursor = logged.full ? (logged.last ?? last) : max(cursor, last)
        return (change, updated)
    }

    /// The log's bounds; (nil, 0) for a store whose format has no log yet (formats 1 and 2:
    /// the first write's migration creates it, and its first entry is seq 1).
    static func logBounds(_ engine: RecordEngine) throws -> (first: Int64?, last: Int64) {
        guard try engine.changeLog.exists() else { return (nil, 0) }
        return try engine.changeLog.bounds()
    }

    // MARK: Connection (on its queue, with its lock held)

    /// Runs `body` with the connection streams read from: the watcher's own for a file (opened
    /// on first need, once the file is a store), the store's for an in-memory store (taking the
    /// store's writer lock inside the watcher's: see the lock order in `ChangeWatcher`). Nil,
    /// without running `body`, while there is no store (no file, an empty file, a database being
    /// created; in memory: not open yet).
    func withEngine<T>(_ state: WatcherState, _ body: (RecordEngine) throws -> T) throws -> T? {
        guard let path else {
            guard let core = state.core else { return nil }
            return try core.writer.withLock { coreState in
                guard let connection = coreState.connection else { return nil }
                return try body(RecordEngine(connection: connection, path: nil, operation: .changes))
            }
        }
        guard let connection = try openConnection(path, state) else { return nil }
        return try body(RecordEngine(connection: connection, path: path, operation: .changes))
    }

    /// Takes the observers' lock (shared) before reading the log, so that from now on every
    /// writer logs. A failure is reported; the stream then sees writers that log anyway.
    func claimObserverLock(_ state: WatcherState) {
        guard state.observerLock == nil, !state.suspended, let path else { return }
        let registrations = self.registrations
        guard state.observerLockFailedAt != registrations else { return }
        do {
            let lock = try ObserverLock(storePath: path)
            try lock.lockShared()
            state.observerLock = lock
            state.observerLockFailedAt = nil
        } catch {
            state.observerLockFailedAt = registrations
            options.eventHandler?(.changeObservationFailed(error.storeError))
        }
    }

    /// The watcher's reader of the store at `path`, opened as reads open it: it never creates,
    /// migrates or changes anything. Nil while there is no store yet; the observers' lock is
    /// taken (creating its file beside the store) only once the file is a store, before its
    /// log is read.
    ///
    /// A store whose directory this process cannot write is read through an immutable snapshot
    /// (see `ReadTarget.snapshot`), kept while the file stays as it was and opened again when it
    /// changed (the next check then serves every parked consumer).
    private func openConnection(_ path: String, _ state: WatcherState) throws -> SQLiteConnection? {
        if let connection = state.connection {
            guard let stamp = state.snapshotStamp, !stamp.isCurrent(path) else {
                // A stream registered since taking the lock failed tries again (nothing when
                // the lock is held).
                claimObserverLock(state)
                return connection
            }
            state.connection = nil
            state.snapshotStamp = nil
            state.lastDataVersion = nil
        }
        guard try StoreOpener.readHeader(path) != nil else { return nil }
        // The observers' lock is taken once the file is known to be a store (never beside
        // another program's file), before anything of its log is read: a commit before it
        // is read all the same (a stream positioned before the store reads every record).
        switch try StoreOpener.openForReading(path: path, options: options) {
        case .store(let opened):
            claimObserverLock(state)
            state.connection = opened
        case .snapshot(let opened, let stamp):
            claimObserverLock(state)
            state.connection = opened
            state.snapshotStamp = stamp
        case .notAStore:
            return nil
        }
        if case .file(let identity) = StoreFileIdentity.lookup(path) { state.connectionIdentity = identity }
        return state.connection
    }

    /// The file's data version now; nil while there is no store or when it cannot be read
    /// (reported): then every check looks again.
    func readDataVersion(_ state: WatcherState) -> Int64? {
        do {
            guard let version = try withEngine(state, { try $0.changeLog.dataVersion() }) else { return nil }
            state.failing = false
            return version
        } catch {
            report(error, state)
            return nil
        }
    }

    /// Reports a failure to read the log once per run of failures, through the store's event
    /// handler: a stream has no error channel, and the failure must not pass silently.
    func report(_ error: any Error, _ state: WatcherState) {
        guard !state.failing else { return }
        state.failing = true
        options.eventHandler?(.changeObservationFailed(Self.storeError(error, path: path)))
    }

    /// `error` as the store error to report, with the operation "changes".
    static func storeError(_ error: any Error, path: String?) -> RecordStoreError {
        if let error = error as? RecordStoreError { return error }
        if let failure = error as? SQLiteFailure { return RecordStoreError(failure, operation: .changes, path: path) }
        return RecordStoreError(code: .sqlite, operation: .changes, path: path, detail: "\(error)")
    }
}
