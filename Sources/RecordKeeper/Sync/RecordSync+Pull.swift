import Foundation

/// What applying one pulled page did.
struct SyncPullPageResult: Sendable {
    var applied = 0
    var cursor: SyncCursor
    /// True when the stored cursor was found behind the one the page was pulled after (`start`
    /// added collections meanwhile and reset it): the pull goes on from the stored cursor.
    var restarted = false
    /// Changes of synced collections the store cannot hold (an empty key, a NUL character),
    /// skipped, each described.
    var refused: [String] = []
}

extension RecordSync {
    /// Pulls page after page until the server's head. The next page is requested (after the
    /// cursor the server gave) while the current one is written, so the server's time and the
    /// local writes overlap; pages are still applied one at a time, in order.
    ///
    /// Every page is checked before it is applied (``SyncAnswerCheck/page(_:after:space:seen:)``).
    /// A change of a synced collection that the store cannot hold (an empty key, a NUL
    /// character) is skipped and the rest applied: once every page is applied, the pull throws
    /// ``SyncError/Code/serverFailure`` naming each such change, so one bad row on the server
    /// does not block every device.
    func pull(_ settings: SyncSettings, into report: inout SyncReport) async throws {
        var (cursor, seen) = try await storedPullState()
        let server = self.server
        let space = settings.space
        var pulledAfter = cursor
        var refused: [String] = []
        var page = try await server.pull(space: space, after: pulledAfter, limit: Self.pullLimit)
        while true {
            try SyncAnswerCheck.page(page, after: pulledAfter, space: space, seen: seen)
            let after = page.cursor
            let next: Task<SyncPage, any Error>? =
                page.hasMore ? Task { try await server.pull(space: space, after: after, limit: Self.pullLimit) } : nil
            let result: SyncPullPageResult
            do {
                result = try await store.performWrite(.syncPull, collection: nil) { [page, pulledAfter] context in
                    try Self.apply(page, after: pulledAfter, space: space, in: context)
                }
            } catch {
                // No request outlives the call: wait for the one in flight (its page is not used).
                next?.cancel()
                _ = await next?.result
                throw error
            }
            report.pulledChanges += result.applied
            refused += result.refused
            seen = max(seen, page.cursor.counter, page.changes.last?.version.rawValue ?? 0)
            cursor = result.cursor
            if result.restarted {
                // `start` reset the stored cursor meanwhile: the page in flight was asked for
                // after the old one, so it is dropped and the pull goes on from the stored cursor.
                next?.cancel()
                _ = await next?.result
                pulledAfter = cursor
                page = try await server.pull(space: space, after: pulledAfter, limit: Self.pullLimit)
                continue
            }
            guard let next else { break }
            pulledAfter = after
            page = try await next.value
        }
        report.cursor = cursor
        if !refused.isEmpty {
            throw SyncError(
                .serverFailure,
                "space \(space): the server holds \(refused.count) change(s) this store cannot hold, skipped (every "
                    + "other change was applied): " + refused.prefix(10).joined(separator: "; ")
                    + (refused.count > 10 ? "; and \(refused.count - 10) more" : "")
                    + ". Correct them on the server: written again under valid names, they come down with a later pull")
        }
    }

    /// Applies one page and its cursor in one local transaction, capturing nothing (no echo).
    static func apply(
        _ page: SyncPage, after pulledAfter: SyncCursor, space: String, in context: WriteContext
    ) throws -> SyncPullPageResult {
        context.capturesSync = false
        let engine = context.engine
        var refused: [String] = []
        let synced = try engine.syncCollections()
        let conflictsExist = try engine.hasSyncConflicts()
        // Nothing pending (the common case of a catching-up device): one statement a change
        // both checks the version and records it.
        let pendingExist = try engine.hasPendingSyncChanges()
        var upserts: [String: [(key: String, data: Data)]] = [:]
        var removals: [String: [String]] = [:]
        var applied = 0
        for change in page.changes {
            guard synced[change.collection] != nil else { continue }
            let name = "record \(RecordStoreError.quoted(change.collection))/\(RecordStoreError.quoted(change.key))"
            if let problem = Self.problem(ofPulledKey: change.key) {
                refused.append("\(name) (version \(change.version)): \(problem)")
                continue
            }
            let key = try RecordNames.key(change.key, collection: change.collection, operation: .syncPull)
            let record = SyncRecordKey(collection: change.collection, key: key)
            let version = change.version.rawValue
            // A tombstone has no shape: only a payload's item version is kept.
            let itemVersion = change.value.payload == nil ? nil : change.itemVersion
            if !pendingExist {
                // This store has it already (own write coming back, a page pulled again) when
                // nothing changed; a version below the one it has means the server went back.
                guard try engine.advanceServerVersion(record, to: version, itemVersion: itemVersion) else {
                    if let known = try engine.syncRecordState(record).serverVersion, version < known {
                        throw Self.wentBack(name, version: version, known: known, space: space)
                    }
                    continue
                }
                switch change.value {
                case .payload(let data): upserts[record.collection, default: []].append((key, data))
                case .tombstone: removals[record.collection, default: []].append(key)
                }
                if conflictsExist {
                    try engine.updateSyncConflictServerSide(
                        record, value: change.value, version: version, itemVersion: itemVersion)
                }
                applied += 1
                continue
            }
            let state = try engine.syncRecordState(record)
            // This store has it already: its own write coming back, or a page pulled again.
            if let known = state.serverVersion, version <= known {
                if version < known { throw Self.wentBack(name, version: version, known: known, space: space) }
                continue
            }
            if state.pending {
                // The local change stays; the server's value waits until it is answered.
                if state.asideVersion.map({ version > $0 }) ?? true {
                    try engine.setAside(record, value: change.value, version: version, itemVersion: itemVersion)
                    applied += 1
                }
                continue
            }
            switch change.value {
            case .payload(let data): upserts[record.collection, default: []].append((key, data))
            case .tombstone: removals[record.collection, default: []].append(key)
            }
            try engine.setServerVersion(record, version, clearingAside: true)
            try engine.setSyncItemVersion(record, itemVersion)
            if conflictsExist {
                try engine.updateSyncConflictServerSide(
                    record, value: change.value, version: version, itemVersion: itemVersion)
            }
            applied += 1
        }
        for collection in Set(upserts.keys).union(removals.keys).sorted() {
            let values = upserts[collection] ?? []
            if values.isEmpty, try engine.collectionForWriting(collection) == nil { continue }
            try context.apply(collection, upserts: values, removals: removals[collection] ?? [])
        }
        var chain = try engine.syncChain()
        chain.saw(max(page.cursor.counter, page.changes.last?.version.rawValue ?? 0))
        try engine.advanceSyncChain(to: chain)
        let stored = try engine.syncCursor()
        // `start` reset the cursor since this pull read it (collections were added): keep it,
        // or the older records of the added collections would never come down.
        if stored < pulledAfter {
            return SyncPullPageResult(applied: applied, cursor: stored, restarted: true, refused: refused)
        }
        let cursor = max(stored, page.cursor)
        try engine.setSyncCursor(cursor)
        return SyncPullPageResult(applied: applied, cursor: cursor, refused: refused)
    }

    /// Why the store cannot hold a pulled record under `key`, or nil when it can.
    static func problem(ofPulledKey key: String) -> String? {
        if key.isEmpty { return "a record key must not be empty" }
        if key.utf8.contains(0) { return "a key of a synced record cannot contain a NUL character" }
        return nil
    }

    private static func wentBack(_ name: String, version: Int64, known: Int64, space: String) -> SyncError {
        SyncError(
            .serverFailure,
            "space \(space): the server delivers \(name) at version \(version), below version \(known) this device has of "
                + "it: the server went back (was its database restored from an older backup?); nothing of the page was "
                + "applied")
    }
}
