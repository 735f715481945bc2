import Foundation

/// What applying one pulled page did.
struct SyncPullPageResult: Sendable {
    var applied = 0
    var cursor: SyncCursor
}

extension RecordSync {
    /// Pulls page after page until the server's head.
    func pull(_ settings: SyncSettings, into report: inout SyncReport) async throws {
        var cursor = try await storedCursor()
        while true {
            let page = try await server.pull(space: settings.space, after: cursor, limit: Self.pullLimit)
            let result = try await store.performWrite(.syncPull, collection: nil) { context in
                try Self.apply(page, in: context)
            }
            report.pulledChanges += result.applied
            let previous = cursor
            cursor = result.cursor
            guard page.hasMore else { break }
            if cursor <= previous {
                throw SyncError(
                    .serverFailure, "the server's page after cursor \(previous) did not advance it (\(page.cursor))")
            }
        }
        report.cursor = cursor
    }

    /// Applies one page and its cursor in one local transaction, capturing nothing (no echo).
    static func apply(_ page: SyncPage, in context: WriteContext) throws -> SyncPullPageResult {
        context.capturesSync = false
        let engine = context.engine
        let synced = try engine.syncCollections()
        let conflictsExist = try engine.hasSyncConflicts()
        var upserts: [String: [(key: String, data: Data)]] = [:]
        var removals: [String: [String]] = [:]
        var applied = 0
        for change in page.changes {
            guard synced[change.collection] != nil else { continue }
            let key = try RecordNames.key(change.key, collection: change.collection, operation: .syncPull)
            let record = SyncRecordKey(collection: change.collection, key: key)
            let version = change.version.rawValue
            let state = try engine.syncRecordState(record)
            // This store has it already: its own write coming back, or a page pulled again.
            if let known = state.serverVersion, version <= known { continue }
            if state.pending {
                // The local change stays; the server's value waits until it is answered.
                if state.asideVersion.map({ version > $0 }) ?? true {
                    try engine.setAside(record, value: change.value, version: version)
                    applied += 1
                }
                continue
            }
            switch change.value {
            case .payload(let data): upserts[record.collection, default: []].append((key, data))
            case .tombstone: removals[record.collection, default: []].append(key)
            }
            try engine.setServerVersion(record, version, clearingAside: true)
            if conflictsExist { try engine.updateSyncConflictServerSide(record, value: change.value, version: version) }
            applied += 1
        }
        for collection in Set(upserts.keys).union(removals.keys).sorted() {
            let values = upserts[collection] ?? []
            if values.isEmpty, try engine.collectionForWriting(collection) == nil { continue }
            try context.apply(collection, upserts: values, removals: removals[collection] ?? [])
        }
        let cursor = max(try engine.syncCursor(), page.cursor)
        try engine.setSyncCursor(cursor)
        return SyncPullPageResult(applied: applied, cursor: cursor)
    }
}
