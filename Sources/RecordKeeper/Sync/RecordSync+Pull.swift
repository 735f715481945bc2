import Foundation

/// What applying one pulled page did.
struct SyncPullPageResult: Sendable {
    var applied = 0
    var cursor: SyncCursor
    /// True when `start` added collections since the pull read its cursor: the stored cursor
    /// stays (it was reset, or the page lacks the added collections' changes), and the pull
    /// goes on from it with ``collections``.
    var restarted = false
    /// The collections the store syncs, as the page's transaction read them.
    var collections: Set<String> = []
    /// Changes of synced collections the store cannot hold (an empty key, a NUL character),
    /// skipped, each described.
    var refused: [String] = []
    /// Records the end of a resync removed (deleted on the server, their tombstones compacted).
    var removedAsCompacted = 0
}

/// A page a live pull answered, with what it was asked for: applied as a pull's first page
/// when the store's cursor and synced collections are still those.
struct SyncLivePage: Sendable {
    var page: SyncPage
    var after: SyncCursor
    var collections: Set<String>?
    /// The highest version the store had seen when the live pull was asked for.
    var seen: Int64
}

/// What a page of a pull from the start (a resync) carries into its local transaction.
struct SyncResyncStep: Sendable {
    /// On the last page: every record the resync's pages named.
    var present: Set<SyncRecordKey>
    /// Whether this is the last page (the head): the resync ends in its transaction.
    var finishing: Bool
}

extension RecordSync {
    /// Pulls page after page until the server's head. The next page is requested (after the
    /// cursor the server gave) while the current one is written, so the server's time and the
    /// local writes overlap; pages are still applied one at a time, in order.
    ///
    /// Every page is checked before it is applied (``SyncAnswerCheck/page(_:after:space:seen:)``).
    /// A change of a synced collection that the store cannot hold (an empty key, a NUL
    /// character) is skipped and the rest applied: once every page is applied, the pull throws
    /// ``/RecordKeeperSync/SyncError/Code/serverFailure`` naming each such change, so one bad row on the server
    /// does not block every device.
    ///
    /// A pull from the start is a **resync** (the first pull, a cursor reset by `start`, or a
    /// cursor the server refused as behind its compaction horizon, which restarts the pull from
    /// the start): it notes every record the pages name, and the last page's transaction
    /// removes the records the store knows on the server at or below the page's horizon that
    /// the server no longer has, unless they have pending changes or a conflict. Until a resync
    /// reaches the head, the store remembers it (`sync_state`: `pull.resync`) and the next pull
    /// starts from the start again.
    ///
    /// `live` is a page a live pull answered (``keepInSync(_:)``): it is the first page when it
    /// was pulled from the stored cursor with the collections synced now, and is dropped
    /// otherwise (another pull moved the cursor meanwhile, or it is older than what a push of
    /// another client of the file showed the store), the pull asking from the cursor.
    func pull(_ settings: SyncSettings, into report: inout SyncReport, live: SyncLivePage? = nil) async throws {
        var (cursor, seen, synced, resyncing) = try await storedPullState()
        let server = self.server
        let space = settings.space
        var pulledAfter = resyncing ? SyncCursor.start : cursor
        var refused: [String] = []
        // Only the synced collections' changes come down (a store syncing more collections
        // than one pull may name pulls them all and ignores the others, as before).
        var filter = Self.pullFilter(synced)
        // The records a pull from the start saw the server holding (live or tombstones).
        var present = Set<SyncRecordKey>()
        var page: SyncPage
        // What the store had seen when the page was asked for: a record it knows at a newer
        // version than the page's since then (a push acknowledged meanwhile, by this client or
        // another of the file) is a stale page, not a server gone back. A complete live page
        // whose counter is below what the store has seen is stale as a whole, and not used.
        var seenAtRequest = seen
        if let live, live.after == pulledAfter, live.collections == filter,
            live.page.hasMore || live.page.cursor.counter >= seen
        {
            page = live.page
            seenAtRequest = live.seen
        } else {
            do {
                page = try await server.pull(space: space, after: pulledAfter, limit: Self.pullLimit, collections: filter)
            } catch let error as SyncError where error.code == .behindHorizon && pulledAfter != .start {
                report.resynced = true
                pulledAfter = .start
                page = try await server.pull(space: space, after: pulledAfter, limit: Self.pullLimit, collections: filter)
            }
        }
        var fromStart = pulledAfter == .start
        while true {
            try SyncAnswerCheck.page(page, after: pulledAfter, space: space, seen: seen, collections: filter)
            let after = page.cursor
            let seenAtNext = max(seen, page.cursor.counter, page.changes.last?.version.rawValue ?? 0)
            let next: Task<SyncPage, any Error>? =
                page.hasMore
                ? Task { [filter] in
                    try await server.pull(space: space, after: after, limit: Self.pullLimit, collections: filter)
                } : nil
            var resync: SyncResyncStep?
            if fromStart {
                for change in page.changes { present.insert(SyncRecordKey(collection: change.collection, key: change.key)) }
                resync = SyncResyncStep(present: page.hasMore ? [] : present, finishing: !page.hasMore)
            }
            let result: SyncPullPageResult
            do {
                result = try await store.performWrite(.syncPull, collection: nil, origin: .sync) {
                    [page, pulledAfter, filter, resync, seenAtRequest] context in
                    try Self.apply(
                        page, after: pulledAfter, filter: filter, space: space, seenAtRequest: seenAtRequest,
                        resync: resync, in: context)
                }
            } catch {
                // No request outlives the call: wait for the one in flight (its page is not used).
                next?.cancel()
                _ = await next?.result
                throw error
            }
            report.pulledChanges += result.applied
            report.removedAsCompacted += result.removedAsCompacted
            refused += result.refused
            seen = max(seen, page.cursor.counter, page.changes.last?.version.rawValue ?? 0)
            cursor = result.cursor
            if result.restarted {
                // `start` added collections meanwhile: the page in flight was asked for after
                // the old cursor or without them, so it is dropped and the pull goes on from
                // the stored cursor, with the collections synced now.
                next?.cancel()
                _ = await next?.result
                pulledAfter = cursor
                filter = Self.pullFilter(result.collections)
                fromStart = pulledAfter == .start
                present = []
                seenAtRequest = seen
                page = try await server.pull(space: space, after: pulledAfter, limit: Self.pullLimit, collections: filter)
                continue
            }
            guard let next else { break }
            if Task.isCancelled {
                // Cancelled between pages: the pages applied stay (each whole, with its
                // cursor); the one in flight is not used.
                next.cancel()
                _ = await next.result
                throw CancellationError()
            }
            pulledAfter = after
            seenAtRequest = seenAtNext
            do {
                // The request runs in its own task: cancelling this call cancels it too.
                page = try await withTaskCancellationHandler {
                    try await next.value
                } onCancel: {
                    next.cancel()
                }
            } catch let error as SyncError where error.code == .behindHorizon {
                // Compacted past this pull's own cursor meanwhile (it ran for longer than the
                // horizon's age allows for): resync from the start.
                report.resynced = true
                pulledAfter = .start
                fromStart = true
                present = []
                page = try await server.pull(space: space, after: pulledAfter, limit: Self.pullLimit, collections: filter)
            }
        }
        report.cursor = cursor
        if !refused.isEmpty {
            throw SyncError(
                .serverFailure,
                "space \(space): the server holds \(refused.count) change(s) this store cannot hold, skipped (every "
                    + "other change was applied): " + refused.prefix(10).joined(separator: "; ")
                    + (refused.count > 10 ? "; and \(refused.count - 10) more" : "")
                    + ". Each comes down once it is written again as this store can hold it (under a valid name; "
                    + "as JSON while this store indexes its collection)")
        }
    }

    /// The collections a pull names: the synced ones, or `nil` (every collection) for more
    /// than one pull may name.
    package static func pullFilter(_ synced: Set<String>) -> Set<String>? {
        synced.count <= SyncPullFilter.maximumCollections ? synced : nil
    }

    /// Applies one page and its cursor in one local transaction, capturing nothing (no echo).
    /// `filter` is the collections the page was pulled with (`nil`: all).
    ///
    /// `seenAtRequest` is the highest version the store had seen when the page was asked for:
    /// a change below the version the store knows of its record is a server gone back, unless
    /// the store has seen more since (a push acknowledged meanwhile, by any client of the
    /// file), which makes the page stale for that record: it is skipped.
    static func apply(
        _ page: SyncPage, after pulledAfter: SyncCursor, filter: Set<String>?, space: String, seenAtRequest: Int64,
        resync: SyncResyncStep? = nil, in context: WriteContext
    ) throws -> SyncPullPageResult {
        let engine = context.engine
        var chain = try engine.syncState.chain()
        let seenSinceRequest = chain.seen > seenAtRequest
        var refused: [String] = []
        let synced = try engine.syncState.collections()
        let conflictsExist = try engine.conflicts.any()
        // Nothing pending (the common case of a catching-up device): one statement a change
        // both checks the version and records it.
        let pendingExist = try engine.syncQueue.hasChanges()
        var upserts: [String: [RecordUpsert]] = [:]
        var removals: [String: [String]] = [:]
        var applied = 0
        // Collections with declared indexes (this device's own): each payload pulled into one
        // must be JSON, or the index's expression fails the page's write, and every later pull
        // with it.
        var indexed = IndexedCollections()
        for change in page.changes {
            guard synced[change.collection] != nil else { continue }
            let name = "record \(RecordStoreError.quoted(change.collection))/\(RecordStoreError.quoted(change.key))"
            if let problem = Self.problem(ofPulledKey: change.key) {
                refused.append("\(name) (version \(change.version)): \(problem)")
                continue
            }
            if try indexed.refuse(change.value, in: change.collection, engine: engine) {
                refused.append(
                    "\(name) (version \(change.version)): its payload is not JSON, and this store declared indexes on "
                        + "\(RecordStoreError.quoted(change.collection)), which read every payload as JSON; this store "
                        + "keeps its older value")
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
                guard try engine.syncRecords.advanceServerVersion(record, to: version, itemVersion: itemVersion) else {
                    if let known = try engine.syncRecords.state(record).serverVersion, version < known, !seenSinceRequest {
                        throw Self.wentBack(name, version: version, known: known, space: space)
                    }
                    continue
                }
                switch change.value {
                case .payload(let data): upserts[record.collection, default: []].append(RecordUpsert(key: key, data: data))
                case .tombstone: removals[record.collection, default: []].append(key)
                }
                if conflictsExist {
                    try engine.conflicts.updateServerSide(
                        record, value: change.value, version: version, itemVersion: itemVersion)
                }
                applied += 1
                continue
            }
            let state = try engine.syncRecords.state(record)
            // This store has it already: its own write coming back, or a page pulled again.
            if let known = state.serverVersion, version <= known {
                if version < known, !seenSinceRequest { throw Self.wentBack(name, version: version, known: known, space: space) }
                continue
            }
            if state.pending {
                // The local change stays; the server's value waits until it is answered.
                if state.asideVersion.map({ version > $0 }) ?? true {
                    try engine.syncRecords.setAside(record, value: change.value, version: version, itemVersion: itemVersion)
                    // An unresolved conflict shows the server's latest value, which keeping
                    // the server's value writes.
                    if conflictsExist {
                        try engine.conflicts.updateServerSide(
                            record, value: change.value, version: version, itemVersion: itemVersion)
                    }
                    applied += 1
                }
                continue
            }
            switch change.value {
            case .payload(let data): upserts[record.collection, default: []].append(RecordUpsert(key: key, data: data))
            case .tombstone: removals[record.collection, default: []].append(key)
            }
            try engine.syncRecords.setServerVersion(record, version, clearingAside: true)
            try engine.syncRecords.setItemVersion(record, itemVersion)
            if conflictsExist {
                try engine.conflicts.updateServerSide(
                    record, value: change.value, version: version, itemVersion: itemVersion)
            }
            applied += 1
        }
        for collection in Set(upserts.keys).union(removals.keys).sorted() {
            let values = upserts[collection] ?? []
            if values.isEmpty, try engine.records.collectionForWriting(collection) == nil { continue }
            try context.apply(collection, upserts: values, removals: removals[collection] ?? [])
        }
        chain.saw(max(page.cursor.counter, page.changes.last?.version.rawValue ?? 0))
        try engine.syncState.advanceChain(to: chain)
        let stored = try engine.syncState.cursor()
        // `start` added collections since this pull read the cursor: it reset the cursor, or
        // (when it was at the start already) the page was pulled without them. Keep the stored
        // cursor, or the older records of the added collections would never come down.
        let collections = Set(synced.keys)
        if stored < pulledAfter || filter.map({ !collections.isSubset(of: $0) }) ?? false {
            return SyncPullPageResult(
                applied: applied, cursor: stored, restarted: true, collections: collections, refused: refused)
        }
        var removed = 0
        if let resync {
            if resync.finishing {
                if let horizon = page.horizon {
                    removed = try removeCompacted(besides: resync.present, horizon: horizon, synced: synced, in: context)
                }
                if try engine.syncState.integer("pull.resync") != nil { try engine.syncState.set("pull.resync", nil) }
            } else {
                try engine.syncState.set("pull.resync", integer: 1)
            }
        }
        // A resync pulls from the start while the stored cursor may be ahead of its pages: the
        // stored one stays until the pages pass it (the flag restarts an interrupted resync).
        let cursor = max(stored, page.cursor)
        try engine.syncState.setCursor(cursor)
        return SyncPullPageResult(
            applied: applied, cursor: cursor, collections: collections, refused: refused, removedAsCompacted: removed)
    }

    /// The end of a resync: removes the records of synced collections the store knows on the
    /// server at or below `horizon` that the server no longer has (not in `present`: deleted
    /// and their tombstones compacted), unless they have pending changes or a conflict, and
    /// forgets their server versions. Returns how many.
    static func removeCompacted(
        besides present: Set<SyncRecordKey>, horizon: Int64, synced: [String: SyncConflictPolicy],
        in context: WriteContext
    ) throws -> Int {
        let engine = context.engine
        var removals: [String: [String]] = [:]
        var count = 0
        for record in try engine.syncRecords.settled(atOrBelow: horizon)
        where synced[record.collection] != nil && !present.contains(record) {
            try engine.syncRecords.forget(record)
            removals[record.collection, default: []].append(record.key)
        }
        for (collection, keys) in removals.sorted(by: { $0.key < $1.key }) {
            guard try engine.records.collectionForWriting(collection) != nil else { continue }
            for key in keys where try engine.records.record(collection, key: key) != nil { count += 1 }
            try context.apply(collection, upserts: [], removals: keys)
        }
        return count
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

/// Which collections of a store have declared indexes, asked once per collection in a
/// transaction: a payload written into one must be JSON, which its indexes' expressions read,
/// or the write fails (and with it the whole page or batch, every time it is tried again).
struct IndexedCollections {
    private var indexed: [String: Bool] = [:]

    /// Whether `value` is a payload that `collection`'s declared indexes cannot read.
    mutating func refuse(_ value: SyncValue, in collection: String, engine: RecordEngine) throws -> Bool {
        guard case .payload(let data) = value else { return false }
        let isIndexed: Bool
        if let known = indexed[collection] {
            isIndexed = known
        } else {
            let id = try engine.records.collectionID(collection)
            isIndexed = try id.map { try !engine.indexes.declaredIndexes($0, collection: collection).isEmpty } ?? false
            indexed[collection] = isIndexed
        }
        return try isIndexed && !engine.indexes.indexesCanRead(data, collection: collection)
    }
}
