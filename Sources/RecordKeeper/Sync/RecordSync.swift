public import Foundation

/// How a synced collection settles two devices' concurrent changes of one record.
public enum SyncConflictPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// The default: the device takes the server's value (so every device converges) and keeps
    /// a ``SyncRecordConflict`` holding both sides until the app resolves it. Nothing is lost.
    case report
    /// The later push wins, by the server's arrival order, never by device clocks.
    case lastWriterWins
}

/// What one ``RecordSync`` pass did.
public struct SyncReport: Sendable, Hashable {
    /// Operations the server answered in this pass (applied, redelivered or conflicting).
    public var pushedOperations: Int
    /// Record changes in those operations.
    public var pushedChanges: Int
    /// Remote changes applied to the local store (own writes coming back are not counted).
    public var pulledChanges: Int
    /// Conflicts recorded in this pass (see ``RecordStore/syncConflicts()``).
    public var newConflicts: [SyncRecordConflict]
    /// The pull cursor after the pass.
    public var cursor: SyncCursor
    /// Set when the store took a new device id before this pass: its file is a copy of
    /// another device's store (`backup(to:)`, a copied file, a restore), so it syncs as a
    /// device of its own (see ``SyncRecovery``).
    public var recovery: SyncRecovery?
    /// Set when the pull resynced: the server had compacted past the store's cursor
    /// (``/RecordKeeperSync/SyncError/Code/behindHorizon``), so the store pulled the space's current state from
    /// the start (docs/SYNC.md "Resync").
    public var resynced: Bool
    /// Records a pull from the start removed because the server deleted them and compacted
    /// their tombstones (the store had not changed them locally).
    public var removedAsCompacted: Int

    /// Creates a report (``RecordSync`` makes them; tests and tools may too).
    public init(
        pushedOperations: Int = 0, pushedChanges: Int = 0, pulledChanges: Int = 0,
        newConflicts: [SyncRecordConflict] = [], cursor: SyncCursor = .start, recovery: SyncRecovery? = nil,
        resynced: Bool = false, removedAsCompacted: Int = 0
    ) {
        self.resynced = resynced
        self.removedAsCompacted = removedAsCompacted
        self.pushedOperations = pushedOperations
        self.pushedChanges = pushedChanges
        self.pulledChanges = pulledChanges
        self.newConflicts = newConflicts
        self.cursor = cursor
        self.recovery = recovery
    }
}

/// A record two devices changed concurrently, kept until the app resolves it.
///
/// The record's value in the store is the server's (``server``); the device's own value is
/// kept here (``local``). Resolve it with ``RecordStore/resolveSyncConflict(_:key:keeping:)``.
public struct SyncRecordConflict: Sendable, Hashable {
    /// The record's collection.
    public var collection: String
    /// The record's key.
    public var key: String
    /// The device's value when the conflict was found; `nil` when the device had deleted it.
    public var local: Data?
    /// The server's value; `nil` when the server had it deleted (a tombstone).
    public var server: Data?
    /// The server's version of the record.
    public var serverVersion: SyncServerVersion?
    /// The item version the device's value was written at (nil: byte-level data, or unknown).
    /// A device running an older app than the one that wrote the server's value has a lower
    /// one: the server refuses an older shape over a newer one as this conflict.
    public var localItemVersion: Int?
    /// The item version the server's value was written at (nil: byte-level data, or unknown).
    public var serverItemVersion: Int?

    /// Creates a conflict (``RecordStore/syncConflicts()`` reads them from the store).
    public init(
        collection: String, key: String, local: Data?, server: Data?, serverVersion: SyncServerVersion?,
        localItemVersion: Int? = nil, serverItemVersion: Int? = nil
    ) {
        self.collection = collection
        self.key = key
        self.local = local
        self.server = server
        self.serverVersion = serverVersion
        self.localItemVersion = localItemVersion
        self.serverItemVersion = serverItemVersion
    }
}

/// How to resolve a ``SyncRecordConflict``.
public enum SyncResolution: Sendable, Hashable {
    /// Keep the device's value: it is written and pushed again, based on the server's version.
    case local
    /// Keep the server's value (already the record's value): the conflict is dropped.
    case server
    /// Write this value (or delete the record, for `nil`) and push it, based on the server's version.
    case merged(Data?)
}

/// A store's sync settings and queue, as recorded in its file.
public struct SyncStatus: Sendable, Hashable {
    /// The space the store syncs with.
    public var space: String
    /// This store's device id, generated when sync started for it.
    public var device: String
    /// The synced collections and their policies.
    public var collections: [String: SyncConflictPolicy]
    /// The pull cursor.
    public var cursor: SyncCursor
    /// Local operations not yet answered by the server.
    public var pendingOperations: Int
    /// Unresolved conflicts.
    public var conflicts: Int

    /// Creates a status (``RecordStore/syncStatus()`` reads it from the store).
    public init(
        space: String, device: String, collections: [String: SyncConflictPolicy], cursor: SyncCursor,
        pendingOperations: Int, conflicts: Int
    ) {
        self.space = space
        self.device = device
        self.collections = collections
        self.cursor = cursor
        self.pendingOperations = pendingOperations
        self.conflicts = conflicts
    }
}

/// The device side of sync: captures local changes of synced collections as operations (in
/// the same SQLite transaction as the change), pushes them, and pulls other devices' changes.
///
/// ```swift
/// let sync = RecordSync(store: store, server: server)
/// try await sync.start(space: "alice", collections: ["notes"])
/// let report = try await sync.sync()     // push what is pending, then pull to the head
/// ```
///
/// Sync settings live in the store file: once started, every committed change to a synced
/// collection, through any `RecordStore` on that file in any process, is captured as one
/// operation per local transaction. A push sends many operations per round trip and applies
/// the server's answers to a batch in one local transaction; a pull applies each page with its
/// cursor in one local transaction, without capturing it again (no echo). When the server
/// cannot be reached, ``/RecordKeeperSync/SyncError/Code/unreachable`` is thrown, nothing local changes, and the
/// operations stay queued for the next call. See <doc:Sync>.
///
/// Calls on one `RecordSync` run one at a time, in the order they were made.
///
/// **To keep a store in sync** without calling ``sync()``, run ``keepInSync(_:)`` in a task:
/// it pushes soon after local commits, holds a live pull otherwise, backs off while offline,
/// and tells what it does through ``activity()``.
///
/// **A device id belongs to one store file.** It is stored with the identity of the file it
/// was taken in; a sync of a store whose file is another one (a copy made by `backup(to:)` or
/// by copying the file, a backup moved into place) first takes a new device id
/// (``SyncReport/recovery``), so a copy never writes as the device it was copied from. Every
/// operation names the one before it (``/RecordKeeperSync/SyncOperation/predecessor``), so the server also
/// refuses what a copy the file's identity cannot tell (a backup copied over the store file in
/// place) sends under the device id: ``/RecordKeeperSync/SyncError/Code/forkedDevice``, resolved by
/// ``recover()``.
///
/// **Answers are checked.** Every outcome and page is checked against what the store knows: an
/// outcome of another operation, a version or counter at or below one the device has seen, a
/// number out of range, a change the store cannot hold. Each is a ``/RecordKeeperSync/SyncError`` with code
/// ``/RecordKeeperSync/SyncError/Code/serverFailure`` naming the space, record or operation, and nothing of
/// that answer is applied.
public actor RecordSync {
    /// The store synced.
    public nonisolated let store: RecordStore
    /// The server it talks to.
    public nonisolated let server: any RecordSyncServer
    /// One call at a time: a push must not interleave with another push or pull of this client.
    private var turns = OperationTurns()
    /// What continuous sync does, for ``activity()``.
    nonisolated let activityHub = SyncActivityHub()
    /// Set while ``keepInSync(_:)`` runs (a second one is refused).
    var keepingInSync = false
    /// Told of every commit that may leave something to push: the synced collections' change
    /// streams while ``keepInSync(_:)`` runs, and this client's own `start` and `recover`
    /// (which capture or reissue operations without changing a record).
    nonisolated let localCommits = OutboxSignal()

    /// Changes per push request (a single larger operation is sent alone: operations travel whole).
    static let pushChangeLimit = 1000
    /// Operations per push request.
    static let pushOperationLimit = 200
    /// Changes per pull request.
    static let pullLimit = 1000
    /// Changes per operation of the initial upload of a collection's existing records.
    static let uploadChunk = 1000
    /// Bytes of keys and payloads per operation of the initial upload (a record larger than
    /// this is an operation of its own): about 1.4 MB as JSON, far below a relay's default
    /// body limit of 8 MiB, so that operations of many records can be pushed through it (a
    /// single record of more than about 6 MiB cannot be, in any operation).
    static let uploadBytes = 1 << 20
    /// About how many bytes of a push one captured operation may take (payloads in base64,
    /// keys and the JSON around them): a local transaction larger than that is captured as
    /// several operations in a row, so that each fits through a relay's default body limit of
    /// 8 MiB with room to spare (SyncQueueTable.splitCaptured).
    static let capturedPushBytes = 4 << 20

    /// Creates a sync client. No I/O.
    public init(store: RecordStore, server: any RecordSyncServer) {
        self.store = store
        self.server = server
    }

    /// Starts syncing `collections` with `space` (or adds collections to a store already
    /// syncing that space). Records present now are uploaded once, by the next push.
    ///
    /// The space is stored in Unicode Normalization Form C, as collection names and keys are, so
    /// "café" typed precomposed or decomposed is one space on the server; a store whose space an
    /// older version stored in another form keeps using it, and `space` is compared in NFC.
    ///
    /// In one local transaction it records the space and a device id (generated once), registers
    /// each collection with `policy` (a registered collection stays synced, even after
    /// ``RecordStore/removeCollection(_:)``; starting again with another policy changes it),
    /// and captures the records the new collections already hold as operations of up to 1,000
    /// changes. Adding collections to a store that already pulled resets its cursor, so their
    /// records on the server come down too (pulling again is harmless). Calling it again with
    /// the same space and collections changes nothing.
    ///
    /// ```swift
    /// try await sync.start(space: "alice", collections: ["notes", "settings"])
    /// ```
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError`` with ``/RecordKeeperSync/SyncError/Code/invalidRequest`` when the store already
    ///   syncs another space, the space is empty, no collection is named on the first start, or
    ///   a name is invalid or contains a NUL character (nothing is changed); ``RecordStoreError``
    ///   (``RecordStoreError/Code/invalidKey`` when a record of a collection to sync has a key
    ///   with a NUL character, which the server cannot store: nothing is changed, and later
    ///   writes of such keys to a synced collection are refused the same way).
    public func start(space: String, collections: [String], policy: SyncConflictPolicy = .report) async throws {
        await takeTurn()
        defer { turns.release() }
        if space.isEmpty { throw SyncError(.invalidRequest, "the space is empty") }
        if space.utf8.contains(0) { throw SyncError(.invalidRequest, "the space contains a NUL character") }
        var names: [String] = []
        for collection in collections {
            let name: String
            do {
                name = try RecordNames.collection(collection, operation: .syncStart)
            } catch let error as RecordStoreError {
                throw SyncError(.invalidRequest, "invalid collection name \(RecordStoreError.quoted(collection))", underlying: error)
            }
            if name.utf8.contains(0) {
                throw SyncError(
                    .invalidRequest,
                    "the collection name \(RecordStoreError.quoted(collection)) contains a NUL character, which the sync server cannot store")
            }
            if !names.contains(name) { names.append(name) }
        }
        try await store.performWrite(.syncStart, collection: nil, origin: .sync) { [names] context in
            try Self.start(space: space, collections: names, policy: policy, in: context)
        }
        // A continuous sync pushes the records it captured, and follows the new collections.
        localCommits.notify()
    }

    /// Pushes every pending operation, then pulls to the server's head.
    ///
    /// - Returns: what both did; ``SyncReport/cursor`` is the cursor after the pull.
    /// - Throws: ``/RecordKeeperSync/SyncError`` (``/RecordKeeperSync/SyncError/Code/unreachable``: nothing local is lost, try
    ///   again later; what was answered before the failure stays applied;
    ///   ``/RecordKeeperSync/SyncError/Code/forkedDevice``: call ``recover()``; ``/RecordKeeperSync/SyncError/Code/serverFailure``:
    ///   the server failed or answered what cannot be true, see the message);
    ///   ``RecordStoreError``. A `SyncError` after part of the work was done carries what was
    ///   done in ``RecordKeeperSync/SyncError/partialReport``: the push's new conflicts, say, when the pull
    ///   after it failed.
    public func sync() async throws -> SyncReport {
        await takeTurn()
        defer { turns.release() }
        let settings = try await boundSettings()
        var report = SyncReport(recovery: settings.recovery)
        do {
            try await push(settings, into: &report)
            try await pull(settings, into: &report)
        } catch var error as SyncError {
            error.attach(report)
            throw error
        }
        return report
    }

    /// Pushes every pending operation and applies the outcomes.
    ///
    /// Operations go in sequence order, up to 200 operations or 1,000 changes per request, so
    /// an initial upload of 100,000 records takes about 100 round trips. The outcomes of one
    /// request are applied in one local transaction: applied operations are removed and their
    /// records take the server version they got (later changes of them are based on it);
    /// conflicting ones are recorded (see ``RecordStore/syncConflicts()``) and their other
    /// changes queued again. An operation another process answered meanwhile is skipped.
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError``: ``/RecordKeeperSync/SyncError/Code/unreachable`` when the server could not be
    ///   reached (the outcome is unknown; the operations stay pending and the next push sends
    ///   them again with the same ids, which the server answers without a second effect);
    ///   ``/RecordKeeperSync/SyncError/Code/forkedDevice`` when the server refused an operation because another
    ///   store wrote as this device (the operations stay pending: call ``recover()``);
    ///   ``/RecordKeeperSync/SyncError/Code/serverFailure`` when the server failed, lost operations of this
    ///   device, or answered what cannot be true (nothing of that answer is applied).
    ///   ``RecordStoreError``.
    public func push() async throws -> SyncReport {
        await takeTurn()
        defer { turns.release() }
        let settings = try await boundSettings()
        var report = SyncReport(recovery: settings.recovery)
        do {
            try await push(settings, into: &report)
        } catch var error as SyncError {
            error.attach(report)
            throw error
        }
        report.cursor = try await storedCursor()
        return report
    }

    /// Pulls to the server's head, page by page, each page with its cursor in one transaction.
    ///
    /// Only the collections synced here are pulled (the server filters:
    /// ``/RecordKeeperSync/RecordSyncServer/pull(space:after:limit:collections:)``, and a page holding another
    /// collection's change is refused); a change this store already has
    /// (its own write coming back, or a page pulled again after a crash) is skipped; a record
    /// with local changes still pending keeps its local value, and the server's value is kept
    /// aside until the pending change is answered. Deletions arrive as tombstones and remove
    /// the record. The stored cursor never moves backwards. Change streams see pulled changes.
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError`` (``/RecordKeeperSync/SyncError/Code/unreachable``: pages applied before stay
    ///   applied, nothing else changed; ``/RecordKeeperSync/SyncError/Code/serverFailure`` for a page that cannot
    ///   be true, not applied, or, after every other change was applied, for changes the store
    ///   cannot hold, which are named and skipped); ``RecordStoreError``.
    public func pull() async throws -> SyncReport {
        await takeTurn()
        defer { turns.release() }
        let settings = try await boundSettings()
        var report = SyncReport(recovery: settings.recovery)
        do {
            try await pull(settings, into: &report)
        } catch var error as SyncError {
            error.attach(report)
            throw error
        }
        return report
    }

    func takeTurn() async {
        if turns.takeIfFree() { return }
        await withCheckedContinuation { turns.enqueue($0) }
    }

    func releaseTurn() {
        turns.release()
    }
}
