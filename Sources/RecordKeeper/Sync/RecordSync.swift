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

    public init(
        pushedOperations: Int = 0, pushedChanges: Int = 0, pulledChanges: Int = 0,
        newConflicts: [SyncRecordConflict] = [], cursor: SyncCursor = .start
    ) {
        self.pushedOperations = pushedOperations
        self.pushedChanges = pushedChanges
        self.pulledChanges = pulledChanges
        self.newConflicts = newConflicts
        self.cursor = cursor
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

    public init(collection: String, key: String, local: Data?, server: Data?, serverVersion: SyncServerVersion?) {
        self.collection = collection
        self.key = key
        self.local = local
        self.server = server
        self.serverVersion = serverVersion
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
/// collection, through any `RecordStore` on that file in any process, is captured.
public actor RecordSync {
    /// The store synced.
    public nonisolated let store: RecordStore
    /// The server it talks to.
    public nonisolated let server: any RecordSyncServer

    /// Creates a sync client. No I/O.
    public init(store: RecordStore, server: any RecordSyncServer) {
        self.store = store
        self.server = server
    }

    /// Starts syncing `collections` with `space` (or adds collections to a store already
    /// syncing that space). Records present now are uploaded once, by the next push.
    ///
    /// - Throws: ``SyncError`` with ``SyncError/Code/invalidRequest`` when the store already
    ///   syncs another space or a name is invalid (nothing is changed); ``RecordStoreError``.
    public func start(space: String, collections: [String], policy: SyncConflictPolicy = .report) async throws {
        throw SyncError(.serverFailure, "RecordSync.start is not built yet")
    }

    /// Pushes every pending operation, then pulls to the server's head.
    ///
    /// - Throws: ``SyncError`` (``SyncError/Code/unreachable``: nothing local is lost, try
    ///   again later); ``RecordStoreError``.
    public func sync() async throws -> SyncReport {
        throw SyncError(.serverFailure, "RecordSync.sync is not built yet")
    }

    /// Pushes every pending operation and applies the outcomes.
    public func push() async throws -> SyncReport {
        throw SyncError(.serverFailure, "RecordSync.push is not built yet")
    }

    /// Pulls to the server's head, page by page, each page with its cursor in one transaction.
    public func pull() async throws -> SyncReport {
        throw SyncError(.serverFailure, "RecordSync.pull is not built yet")
    }
}

extension RecordStore {
    /// The store's sync settings and queue; `nil` when sync never started for it. Never writes.
    public nonisolated(nonsending) func syncStatus() async throws -> SyncStatus? {
        throw SyncError(.serverFailure, "syncStatus is not built yet")
    }

    /// The unresolved sync conflicts, by collection and key. Never writes.
    public nonisolated(nonsending) func syncConflicts() async throws -> [SyncRecordConflict] {
        throw SyncError(.serverFailure, "syncConflicts is not built yet")
    }

    /// Resolves the conflict of one record.
    ///
    /// - Throws: ``RecordStoreError`` (code `.notFound`-like when there is no such conflict).
    public nonisolated(nonsending) func resolveSyncConflict(
        _ collection: String, key: String, keeping resolution: SyncResolution
    ) async throws {
        throw SyncError(.serverFailure, "resolveSyncConflict is not built yet")
    }
}
