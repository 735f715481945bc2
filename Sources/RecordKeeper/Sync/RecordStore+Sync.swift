import Foundation

extension RecordStore {
    /// The store's sync settings and queue; `nil` when sync never started for it.
    ///
    /// Reading never writes: a store without the tables of sync (never synced, or written by
    /// an older format) answers `nil` and is left as it is.
    ///
    /// ```swift
    /// if let status = try await store.syncStatus(), status.pendingOperations > 0 { … }
    /// ```
    /// - Throws: ``RecordStoreError`` when the store cannot be read.
    public nonisolated(nonsending) func syncStatus() async throws -> SyncStatus? {
        try await performRead(.syncStatus, collection: nil) { source in
            guard let engine = source.engine, try engine.syncState.exists() else { return nil }
            return try engine.readTransaction {
                var status: SyncStatus?
                if let space = try engine.syncState.string("space"), let device = try engine.syncState.string("device") {
                    status = SyncStatus(
                        space: space, device: device, collections: try engine.syncState.collections(),
                        cursor: try engine.syncState.cursor(), pendingOperations: try engine.syncQueue.count(),
                        conflicts: try engine.conflicts.count())
                }
                return status
            }
        }
    }

    /// The unresolved sync conflicts, by collection and key.
    ///
    /// Each holds the device's value and the server's (which is the record's value in the
    /// store now). Reading never writes: a store that never synced answers `[]`.
    ///
    /// ```swift
    /// for conflict in try await store.syncConflicts() {
    ///     try await store.resolveSyncConflict(conflict.collection, key: conflict.key, keeping: .local)
    /// }
    /// ```
    /// - Throws: ``RecordStoreError`` when the store cannot be read.
    public nonisolated(nonsending) func syncConflicts() async throws -> [SyncRecordConflict] {
        try await performRead(.syncConflicts, collection: nil) { source in
            guard let engine = source.engine, try engine.syncState.exists() else { return [] }
            return try engine.conflicts.all()
        }
    }

    /// Resolves the conflict of one record, in one transaction.
    ///
    /// - ``SyncResolution/server``: the record keeps the server's value; the conflict is dropped.
    ///   If the device wrote the record again after the conflict appeared (its change not yet
    ///   pushed), the server's value is put back and that change is not pushed.
    /// - ``SyncResolution/local``: the device keeps its latest value: the one it wrote after the
    ///   conflict appeared, if it did (that change is pushed as it is), else the conflict's
    ///   local value, written again (or the record removed, when the device had deleted it) as
    ///   an ordinary change. Either is pushed based on the server's version, so it wins unless
    ///   another device changed the record meanwhile.
    /// - ``SyncResolution/merged(_:)``: the given value is written (`nil` removes the record)
    ///   and pushed the same way.
    ///
    /// A conflict the device's later write already settled (the server applied it) is gone
    /// from ``syncConflicts()``: resolving it throws as for any record without a conflict.
    ///
    /// ```swift
    /// try await store.resolveSyncConflict("notes", key: "today", keeping: .merged(mergedData))
    /// ```
    /// - Throws: ``RecordStoreError`` with code ``RecordStoreError/Code/invalidArgument`` when
    ///   there is no conflict for that record (nothing is written), or another failure.
    public nonisolated(nonsending) func resolveSyncConflict(
        _ collection: String, key: String, keeping resolution: SyncResolution
    ) async throws {
        let name = try RecordNames.collection(collection, operation: .syncResolve)
        let key = try RecordNames.key(key, collection: name, operation: .syncResolve)
        let record = SyncRecordKey(collection: name, key: key)
        let noConflict = RecordStoreError(
            code: .invalidArgument, operation: .syncResolve, collection: name, key: key, path: path,
            detail: "there is no sync conflict for collection \(RecordStoreError.quoted(name)) key \(RecordStoreError.quoted(key))")
        // Checked first by a read, so that a store without it is not created or migrated.
        let exists = try await performRead(.syncResolve, collection: name) { source in
            guard let engine = source.engine, try engine.syncState.exists() else { return false }
            return try engine.conflicts.conflict(record) != nil
        }
        guard exists else { throw noConflict }
        try await performWrite(.syncResolve, collection: name) { context in
            guard let conflict = try context.engine.conflicts.conflict(record) else { throw noConflict }
            // A change of the record pending now was written after the conflict appeared (the
            // conflict dropped the older ones): the device's latest value.
            let editedSince = try context.engine.syncQueue.hasChange(record, besides: 0)
            switch resolution {
            case .server:
                // The record holds the server's value unless the device wrote it since, or it
                // kept its local value (a server value its indexes could not read).
                if try editedSince || context.engine.records.payload(name, key: key) != conflict.server {
                    if let server = conflict.server {
                        var indexed = IndexedCollections()
                        if try indexed.refuse(.payload(server), in: name, engine: context.engine) {
                            throw RecordStoreError(
                                code: .invalidArgument, operation: .syncResolve, collection: name, key: key, path: path,
                                detail: "the server's value is not JSON, and this store declared indexes on collection "
                                    + "\(RecordStoreError.quoted(name)), which read every payload as JSON: keep .local or "
                                    + ".merged, or drop the collection's indexes (dropIndex) first")
                        }
                    }
                    // The server's value, written as sync writes pulled values: not captured.
                    try context.withOrigin(.sync) {
                        try RecordSync.write(conflict.server.map { .payload($0) } ?? .tombstone, to: record, in: context)
                    }
                    try context.engine.syncRecords.setItemVersion(record, conflict.serverItemVersion)
                    try context.engine.syncQueue.dropChanges(record, after: 0)
                    // The record is at the conflict's server version now (a newer value pulled
                    // while the dropped edit was pending is the conflict's, and was kept aside).
                    try context.engine.syncRecords.setServerVersion(
                        record, conflict.serverVersion?.rawValue, clearingAside: true)
                }
            case .local:
                if !editedSince {
                    // The local value kept by the conflict is in the shape of the item version it
                    // was written at; a migration since rewrote the records, not the conflict.
                    if conflict.local != nil, let kept = conflict.localItemVersion,
                        case .recorded(let current, _) = try context.engine.itemVersions.itemVersion(name), kept < current
                    {
                        throw RecordStoreError(
                            code: .invalidArgument, operation: .syncResolve, collection: name, key: key, path: path,
                            detail: "the local value was written at item version \(kept), and collection "
                                + "\(RecordStoreError.quoted(name)) is at item version \(current) now: keeping it would store "
                                + "the older shape as the newer; resolve with .merged (the value in the current shape) or .server")
                    }
                    if try context.engine.records.payload(name, key: key) == conflict.local {
                        // The record kept its local value (a server value its indexes could
                        // not read): nothing to write, but it goes out all the same.
                        _ = try context.engine.syncQueue.capture([record])
                    } else {
                        try RecordSync.write(conflict.local.map { .payload($0) } ?? .tombstone, to: record, in: context)
                    }
                }
            case .merged(let value):
                try RecordSync.write(value.map { .payload($0) } ?? .tombstone, to: record, in: context)
            }
            try context.engine.conflicts.delete(record)
        }
    }
}
