import Foundation

extension RecordStore {
    /// What changed in `collection` after this call: every commit by this store, by other
    /// `RecordStore` instances on the same file and by other processes (an app extension, the
    /// `recordkeeper` tool), with the keys and payloads that changed and removals as removals.
    ///
    /// The stream is registered and positioned when this returns. Each element holds changes
    /// of one or more commits (never of a failed or rolled-back write) with the latest payload
    /// of each changed key, read when the element is produced: a consumer that keeps up gets one
    /// element per commit, a slower one gets the commits it missed merged (several changes to a
    /// key become one, the latest wins: a key removed last arrives as a removal). Payloads
    /// written unchanged are left out. Removing the collection yields the removal of every key.
    /// A very large commit arrives in parts of at most 4,096 changed keys.
    ///
    /// Memory: a stream holds only its position in the store's change log, never pending
    /// changes, so a consumer that does not read costs nothing while a large import runs.
    ///
    /// Cost: writers, in every process, log their changes only while some stream observes the
    /// file (a shared lock on `<store>-observers` says so). Creating a stream may wait, on the
    /// store's executor, for a write that runs unobserved at that moment to commit. An app
    /// about to be suspended releases that lock with ``suspendObservation()``.
    ///
    /// Latency: commits of this store wake a waiting consumer at once. Commits of other
    /// connections are noticed through the platform's event source (inotify on Linux; Darwin
    /// notifications and a `-wal` file source on Apple platforms), with an adaptive poll behind
    /// it (never at a fixed rate, nothing while no consumer waits), then read: under a
    /// millisecond typically on Linux. See the Observation article.
    ///
    /// A stream taken before the store exists (no file yet, or not even its directory) creates
    /// nothing and hears every commit from the store's first one on, whoever creates it.
    ///
    /// A stream that falls more than 100,000 logged changes behind (its next changes were
    /// trimmed from the log, or one commit changed more records than that) gets a complete
    /// resync: one element with ``RecordChanges/isFullState`` set, holding every record of the
    /// collection (read in one transaction) and standing for "nothing else exists", then
    /// changes as before. Records removed while it was that far behind are not named: a
    /// consumer keeping a copy replaces it with a full state (``RecordChanges/applying(to:)``
    /// does). A failure to read the log is reported to ``Options/eventHandler`` as
    /// ``RecordStoreEvent/changeObservationFailed(_:)``, and the stream retries at the next
    /// change. No collection can have an empty name, so the stream for `""` finishes at once.
    /// A store whose URL is not a file URL reports that (``RecordStoreError/Code/invalidArgument``)
    /// the same way, and its streams finish at once.
    ///
    /// ```swift
    /// for await change in await store.changes(in: "notes") {
    ///     notes = change.applying(to: notes)   // replaces the copy for a full state
    /// }
    /// ```
    public func changes(in collection: String) -> AsyncStream<RecordChanges> {
        guard !collection.isEmpty else { return AsyncStream { $0.finish() } }
        if let locationError = core.locationError {
            // Nothing at such a URL can ever change: the stream ends, and says why.
            options.eventHandler?(.changeObservationFailed(locationError))
            return AsyncStream { $0.finish() }
        }
        let name = RecordNames.normalized(collection)
        let watcher = watcher
        let id: UUID
        if path == nil {
            // In memory only this store writes, and logs only while a stream is registered:
            // register under the store's lock, at the end of the log as its connection sees
            // it, or, not open yet, to be positioned by its first write.
            id = core.writer.withLock { state -> UUID in
                guard let connection = state.connection else { return watcher.register(name, cursor: nil) }
                let engine = RecordEngine(connection: connection, path: nil, operation: .changes)
                do {
                    return watcher.register(name, cursor: try engine.changeLog.bounds().last)
                } catch {
                    options.eventHandler?(.changeObservationFailed(ChangeWatcher.storeError(error, path: nil)))
                    return watcher.register(name, cursor: nil)
                }
            }
        } else {
            id = watcher.register(name, cursor: nil)
            // Blocks this store's executor (not a cooperative thread) for one short read.
            watcher.positionNow(id)
        }
        let subscription = Subscription(watcher: watcher, id: id)
        return AsyncStream(
            unfolding: { await subscription.next() },
            onCancel: { subscription.end() })
    }

    /// Stops observing the store file until ``resumeObservation()``, for an app about to be
    /// suspended: the store releases its lock on `<store>-observers` and stops watching the
    /// file, so it holds no file lock of the library's and nothing wakes it.
    ///
    /// iOS terminates a suspended app that holds a file lock in a shared (app-group)
    /// container (exception `0xdead10cc`). Call this when the app moves to the background and
    /// ``resumeObservation()`` when it becomes active again; streams, their consuming tasks and
    /// `FeatureModel`s stay as they are:
    ///
    /// ```swift
    /// .onChange(of: scenePhase) { _, phase in
    ///     switch phase {
    ///     case .background: store.suspendObservation()
    ///     case .active: store.resumeObservation()
    ///     default: break
    ///     }
    /// }
    /// ```
    ///
    /// While suspended, streams deliver nothing and writers (of every process) may not log
    /// their changes. Nothing is missed: ``resumeObservation()`` finds out whether the file
    /// changed meanwhile, and if it did, each stream's next element is a full state of its
    /// collection (``RecordChanges/isFullState``). Reads and writes of the store work as
    /// always; SQLite's own locks are held only during transactions, plus, while a connection is
    /// open, a shared lock on the `-shm` file that ``close()`` releases (see the Observation
    /// article). Returns once the lock is released (after the read a stream may have in
    /// progress), or, when a write transaction of this store runs, at once: that transaction
    /// releases it when it ends. It never waits for a write. Calling it again while suspended
    /// does nothing; an in-memory store holds no lock and is not affected.
    public nonisolated func suspendObservation() {
        guard path != nil else { return }
        watcher.suspend()
        // A write of this store keeps the observers' lock for a moment after its commit (on
        // Linux, see `ChangeLogObserver`): suspended, the process holds no lock of the library's.
        // Never waits for a running transaction (this may run on the main thread): that one
        // releases the lock at its end.
        if ChangeLogObserver.keepsLockBetweenTransactions { core.releaseBetweenTransactionsIfIdle() }
    }

    /// Observes the store file again after ``suspendObservation()``: takes the observers'
    /// lock again (waiting for a write that runs unobserved in another process at that
    /// moment), then delivers to each stream what it missed: the log from its position when the
    /// file did not change while suspended, else one full state of its collection. Does nothing
    /// when not suspended.
    public nonisolated func resumeObservation() {
        watcher.resume()
    }

    /// How many change streams observe `collection` (for tests).
    nonisolated func observerCount(_ collection: String) -> Int {
        watcher.count(RecordNames.normalized(collection))
    }

    /// How many change streams of `collection` have a consumer waiting for a change (for tests:
    /// the handshake "the consumer is parked now").
    nonisolated func waitingConsumerCount(_ collection: String) -> Int {
        watcher.waitingCount(RecordNames.normalized(collection))
    }
}

/// One stream's registration: it ends when the stream's consumer task is cancelled or when the
/// stream and its iterators are released (this object's `deinit`).
private final class Subscription: Sendable {
    let watcher: ChangeWatcher
    let id: UUID

    init(watcher: ChangeWatcher, id: UUID) {
        self.watcher = watcher
        self.id = id
    }

    func next() async -> RecordChanges? { await watcher.next(id) }
    func end() { watcher.unregister(id) }

    deinit { watcher.unregister(id) }
}
