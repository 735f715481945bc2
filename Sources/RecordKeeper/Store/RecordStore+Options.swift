/// How hard each commit works to survive a power loss.
///
/// Both modes use SQLite's write-ahead log and survive a crash of the process: a commit that
/// returned is in the log. They differ on power loss or an operating-system crash. Neither
/// ever leaves a corrupt file. docs/RELIABILITY.md says what each costs on each platform.
public enum Durability: String, Sendable, CaseIterable {
    /// `synchronous = FULL`: the log is synced to disk at every commit. A commit that returned
    /// survives power loss. The default. On Apple platforms every sync is
    /// `fcntl(F_FULLFSYNC)` (`PRAGMA fullfsync`), because `fsync` there leaves the data in the
    /// drive's cache; that makes each commit cost a full flush of the drive's cache.
    case full
    /// `synchronous = NORMAL`: the log is synced at checkpoints only. A commit that returned
    /// survives a process crash, but the last commits may be lost on power loss. Faster. On
    /// Apple platforms checkpoints sync with `F_FULLFSYNC` (`PRAGMA checkpoint_fullfsync`).
    case normal
}

extension RecordStore {
    /// Settings of a store, fixed when it is created.
    public struct Options: Sendable {
        /// How commits are synced to disk. Default ``Durability/full``.
        public var durability: Durability
        /// How long a request waits for a lock held by another connection or process before it
        /// fails with ``RecordStoreError/Code/busy``. Default 5 seconds.
        public var busyTimeout: Duration
        /// Receives opening timings and request traces. The library prints nothing itself.
        public var eventHandler: (@Sendable (RecordStoreEvent) -> Void)?
        /// The data-protection class of the files the store creates (Apple platforms but macOS;
        /// no effect elsewhere). Default ``FileProtection/systemDefault``.
        public var fileProtection: FileProtection
        /// What wakes change streams for other processes' commits (tests choose the fallback).
        var changeSignal: ChangeSignalChoice = .platform

        /// Creates options; every argument has the default described on its property.
        public init(
            durability: Durability = .full,
            busyTimeout: Duration = .seconds(5),
            fileProtection: FileProtection = .systemDefault,
            eventHandler: (@Sendable (RecordStoreEvent) -> Void)? = nil
        ) {
            self.durability = durability
            self.busyTimeout = busyTimeout
            self.fileProtection = fileProtection
            self.eventHandler = eventHandler
        }
    }
}

/// Something a store reports to ``RecordStore/Options/eventHandler``.
public enum RecordStoreEvent: Sendable {
    /// The store opened; how long each phase took.
    case opened(OpeningTimings)
    /// Opening failed with this error. A later request will try again.
    case openingFailed(RecordStoreError)
    /// A request finished (successfully or not) after `duration` on the store's executor.
    case request(operation: StoreOperation, collection: String?, duration: Duration, succeeded: Bool)
    /// A change stream could not read the store's change log (for example the file became
    /// unreadable). The stream keeps its position and tries again at the next change it is
    /// told of; this is reported once per run of failures.
    case changeObservationFailed(RecordStoreError)
    /// A checkpoint (copying the write-ahead log into the main file), scheduled after a commit
    /// or run by ``RecordStore/close()``, failed. Every commit is still safe in the log; the
    /// next checkpoint tries again.
    case checkpointFailed(RecordStoreError)
    /// A round of ``OutboxProcessor/run()`` failed with this store error (nothing of that
    /// round's outcomes was lost: what was not recorded is delivered again, with its id). `run()`
    /// goes on after ``OutboxProcessor/storeRetryDelay(afterFailures:)``.
    case outboxRoundFailed(RecordStoreError)
    /// An outbox operation moved to the dead letters: the server refused it for good, or it
    /// used up ``RetryPolicy/maximumAttempts``. `lastError` says why. It stays there, out of the
    /// way of its ordering key, until it is requeued (``Outbox/requeue(_:)``) or discarded
    /// (``Outbox/discard(_:)``). This event is how an app running an outbox processor's
    /// ``OutboxProcessor/run()`` hears of it without polling ``Outbox/deadLetters()``.
    case outboxDeadLettered(OutboxOperation)
}

/// How long the phases of opening a store took.
public struct OpeningTimings: Sendable, CustomStringConvertible {
    /// The store file, or nil in memory.
    public let path: String?
    /// Creating missing parent directories (zero when they existed).
    public let directory: Duration
    /// Opening the SQLite connection and checking the file's format.
    public let open: Duration
    /// Running migrations (zero when the store was current).
    public let migration: Duration
    /// The format version found before migrating (0 for a new store).
    public let formatVersionFound: Int
    /// The format version after opening.
    public let formatVersion: Int

    public var description: String {
        "opened \(path ?? "in-memory store"): directory \(directory), open \(open), migration \(migration) (format \(formatVersionFound) → \(formatVersion))"
    }
}
