import Foundation

/// Writes the change log (`ChangeLog`) for the change streams of every connection, as a
/// ``TransactionObserver`` of one store's write transactions, and serves this store's streams
/// after a commit.
///
/// Only transactions that some stream observes log (`ObserverLock`): a transaction that finds
/// no stream holds the observers' lock exclusively until it ends and logs nothing. In memory
/// only this store's streams can observe.
///
/// On Linux a transaction that took the lock keeps it after its commit, for the transactions
/// that follow within ``lingerInterval`` (the store releases it then, between transactions:
/// `releaseBetweenTransactions()`): while it holds the lock exclusively no stream can exist, so
/// they need not ask again. That saves a lock and an unlock call per commit (about 2 µs of a
/// single save's 15–20 µs). A stream starting meanwhile waits for the release, as it waits for a
/// transaction that holds the lock, at most ``lingerInterval`` longer. Apple platforms release
/// at every commit: a process suspended while it holds a lock on a file in a shared container
/// is terminated by the system.
final class ChangeLogObserver: TransactionObserver {
    /// The store file (nil in memory).
    private let path: String?
    /// Delivers the change log to this store's streams.
    private let watcher: ChangeWatcher
    /// The observers' lock of a file store, opened by the first write.
    private var observerLock: ObserverLock?
    private var observerLockUnavailable = false

    // The transaction running now:
    /// True when some stream observes it: it logs its changes.
    private var logs = false
    /// True while it holds the observers' lock exclusively (nothing observes, nothing logged).
    private var holdsLock = false
    /// True while it keeps the lock between transactions (see the type's comment).
    private var lingers = false

    /// How long the lock is kept after a commit for the transactions that follow.
    static let lingerInterval: Duration = .milliseconds(5)

    /// Whether the lock is kept after a commit on this platform (see the type's comment).
    static var keepsLockBetweenTransactions: Bool {
        #if canImport(Darwin)
            false
        #else
            true
        #endif
    }
    /// The first and last change-log seq it wrote.
    private var firstLogged: Int64?
    private var lastLogged: Int64 = 0
    /// True once it logged more rows than the log keeps (see `recordDidChange`).
    private var overflowed = false

    init(path: String?, watcher: ChangeWatcher) {
        self.path = path
        self.watcher = watcher
    }

    func transactionDidBegin(_ transaction: WriteContext) throws {
        firstLogged = nil
        lastLogged = 0
        overflowed = false
        // Holding the lock exclusively since an earlier transaction: nothing can observe.
        let unobserved = lingers || claimUnobserved()
        lingers = false
        holdsLock = unobserved && path != nil
        logs = !unobserved
        try watcher.positionNewStreams(transaction.engine)
    }

    func recordDidChange(_ collection: ObservedCollection, key: String, in transaction: WriteContext) throws {
        // A transaction that changes more records than the log keeps would push every stream
        // behind the log anyway (each is positioned before it), so they all resync from the
        // records: the rows past that point would only be trimmed again at commit.
        guard logs, !overflowed else { return }
        let seq = try transaction.engine.changeLog.append(collection.name, key: key)
        if firstLogged == nil { firstLogged = seq }
        lastLogged = seq
        if seq - (firstLogged ?? seq) >= ChangeLog.retainedEntries { overflowed = true }
    }

    func observesRemoval(of collection: ObservedCollection, in transaction: WriteContext) -> Bool {
        logs && !overflowed
    }

    /// Trims the log when this transaction's entries crossed a trimming point.
    func transactionWillCommit(_ transaction: WriteContext) throws {
        if overflowed {
            // Keep only the newest row (a seq is never given out twice): every stream is now
            // behind the log and resyncs from the records.
            try transaction.engine.changeLog.trim(through: lastLogged - 1)
        } else if let firstLogged, let bound = ChangeLog.trimBound(first: firstLogged, last: lastLogged) {
            try transaction.engine.changeLog.trim(through: bound)
        }
    }

    func transactionDidCommit(_ transaction: WriteContext) {
        #if canImport(Darwin)
            // Other processes' streams wake on this (see `DarwinChangeSignal`).
            if firstLogged != nil, let identity = transaction.fileIdentity { CommitNotice.post(identity) }
        #endif
        end(committed: true)
        watcher.committed()
    }

    func transactionDidRollBack(_ transaction: WriteContext) {
        // Released at once: the store schedules the later release after commits only.
        end(committed: false)
    }

    var holdsBetweenTransactions: Bool { lingers }

    func releaseBetweenTransactions() {
        if lingers { observerLock?.release() }
        lingers = false
    }

    private func end(committed: Bool) {
        if holdsLock {
            // Suspended, the process must hold no lock of the library's between transactions.
            if committed, Self.keepsLockBetweenTransactions, !watcher.isSuspended {
                lingers = true
            } else {
                observerLock?.release()
            }
        }
        holdsLock = false
        logs = false
    }

    /// True when no change stream of any connection observes the store, holding the observers'
    /// lock exclusively until the transaction ends (see `ObserverLock`); false when the
    /// transaction must log its changes.
    private func claimUnobserved() -> Bool {
        guard let path else { return !watcher.hasSubscribers }  // in memory, only this store
        if observerLock == nil, !observerLockUnavailable {
            do {
                observerLock = try ObserverLock(storePath: path)
            } catch {
                // Not a failure of the write: without the lock file it logs every change.
                observerLockUnavailable = true
            }
        }
        return observerLock?.lockIfUnobserved() ?? false
    }
}
