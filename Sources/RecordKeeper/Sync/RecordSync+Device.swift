import Foundation

/// A new device id a store took: after it was found to be a copy of another device's store
/// file, or when asked to (``RecordSync/recover()``).
///
/// Its pending operations were given new ids and go to the server as the new device's, each
/// still based on the server version the store last saw: an edit made meanwhile on the server
/// (by the device the store was copied from, say) becomes a reported conflict, never a silent
/// overwrite.
public struct SyncRecovery: Sendable, Hashable {
    /// Why the store took a new device id.
    public enum Reason: String, Sendable, Hashable {
        /// The store file is not the file its device id was taken in: a copy (`backup(to:)`,
        /// a copied file, a restore that moved a backup into place).
        case copied
        /// The store synced with a version of the library that did not bind device ids to
        /// files: its chain of operations is unknown, so it starts a new one.
        case unbound
        /// ``RecordSync/recover()`` was called.
        case requested
    }

    /// Why it happened.
    public var reason: Reason
    /// The device id the store had (nil if it had none).
    public var previousDevice: String?
    /// The device id it syncs as now.
    public var device: String
    /// Pending operations given new ids, to be sent as the new device's.
    public var reissuedOperations: Int

    /// Creates a recovery report.
    public init(reason: Reason, previousDevice: String?, device: String, reissuedOperations: Int) {
        self.reason = reason
        self.previousDevice = previousDevice
        self.device = device
        self.reissuedOperations = reissuedOperations
    }
}

extension RecordSync {
    /// Makes the store sync as a new device: the way out when the server refuses its
    /// operations as ``/RecordKeeperSync/SyncError/Code/forkedDevice`` (another store synced under this device
    /// id: a backup or copy of it, or this store before it was restored), and the step to take
    /// after restoring a synced store from a backup (docs/BACKUP.md).
    ///
    /// In one local transaction it takes a new device id (bound to this store file), gives
    /// every pending operation a new id, and starts the device's chain again. The pending
    /// changes keep their values and the server versions the store last saw, so the next push
    /// sends them as the new device's: a record changed on the server meanwhile becomes a
    /// reported conflict (both values kept), never a silent overwrite, and a change the server
    /// already has under the old device id becomes a conflict with an equal value, which is
    /// not recorded. The cursor stays: the next pull brings what the server got since. No I/O
    /// with the server.
    ///
    /// ```swift
    /// do {
    ///     try await sync.sync()
    /// } catch let error as SyncError where error.code == .forkedDevice {
    ///     try await sync.recover()
    ///     try await sync.sync()
    /// }
    /// ```
    ///
    /// - Returns: the old and new device ids and how many operations got new ids.
    /// - Throws: ``/RecordKeeperSync/SyncError`` with ``/RecordKeeperSync/SyncError/Code/invalidRequest`` when sync never started
    ///   for the store (nothing is changed); ``RecordStoreError``.
    @discardableResult
    public func recover() async throws -> SyncRecovery {
        await takeTurn()
        defer {
            releaseTurn()
            // A continuous sync pushes the reissued operations.
            localCommits.notify()
        }
        return try await store.performWrite(.syncPush, collection: nil, origin: .sync) { context in
            let engine = context.engine
            guard try engine.syncState.exists(), try engine.syncState.string("space") != nil else {
                throw SyncError(.invalidRequest, "sync has not started for this store: nothing to recover")
            }
            let taken = try engine.syncState.takeNewDevice()
            return SyncRecovery(
                reason: .requested, previousDevice: taken.previous, device: taken.device,
                reissuedOperations: taken.reissued)
        }
    }

    /// The stored space and device, after making sure the device id belongs to this file: a
    /// store whose file is not the one its device id was taken in (a copy) or that never bound
    /// it (synced by an older library) takes a new device id first (see ``recover()``).
    func boundSettings() async throws -> SyncSettings {
        let found = try await store.performRead(.syncPush, collection: nil) { source -> (SyncSettings, Bool)? in
            guard let engine = source.engine, try engine.syncState.exists(),
                let space = try engine.syncState.string("space"), let device = try engine.syncState.string("device")
            else { return nil }
            return (SyncSettings(space: space, device: device), try Self.needsNewDevice(engine))
        }
        guard let (settings, rebind) = found else {
            throw SyncError(.invalidRequest, "sync has not started for this store: call start(space:collections:) first")
        }
        guard rebind else { return settings }
        return try await store.performWrite(.syncPush, collection: nil, origin: .sync) { context in
            let engine = context.engine
            guard let space = try engine.syncState.string("space") else {
                throw SyncError(.invalidRequest, "sync has not started for this store: call start(space:collections:) first")
            }
            // Another client of the file may have bound it meanwhile.
            guard try Self.needsNewDevice(engine) else {
                return SyncSettings(space: space, device: try engine.syncState.string("device") ?? "")
            }
            let reason: SyncRecovery.Reason = try engine.syncState.string("device.file") == nil ? .unbound : .copied
            let taken = try engine.syncState.takeNewDevice()
            return SyncSettings(
                space: space, device: taken.device,
                recovery: SyncRecovery(
                    reason: reason, previousDevice: taken.previous, device: taken.device,
                    reissuedOperations: taken.reissued))
        }
    }

    /// Whether the stored device id was taken in another file than the one `engine` reads (or
    /// was never bound to one). A path that cannot be examined tells nothing: no.
    private static func needsNewDevice(_ engine: RecordEngine) throws -> Bool {
        guard let current = engine.syncState.fileMarker else { return false }
        return try engine.syncState.string("device.file") != current
    }
}
