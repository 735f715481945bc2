/// A ``RecordSyncServer`` that reads several consecutive pages of a pull in one request to its
/// storage: one snapshot, one statement, instead of one round of each per page. The relay uses
/// it to fill an answer of several pages (`pages=N`) for a device catching up.
///
/// The pages are what `pull(space:after:limit:collections:)` would answer for each page's
/// cursor in that snapshot: each holds at most `limit` changes, each but the last says
/// ``SyncPage/hasMore``, the next starts at the cursor of the one before, and the list stops at
/// the first page without more, or after `pages` pages. The read as a whole holds one
/// ``SyncPage/payloadBudget``: its last page may end sooner than a pull of its cursor would.
package protocol SyncPagesPulling: RecordSyncServer {
    /// Up to `pages` consecutive pages of `limit` changes from `cursor` (at least one page).
    ///
    /// - Throws: ``SyncError`` as ``RecordSyncServer/pull(space:after:limit:collections:)``
    ///   does; nothing of a failed call is answered.
    func pullPages(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, pages: Int
    ) async throws -> [SyncPage]
}

extension SyncPage {
    /// The consecutive pages of at most `limit` changes that `changes` make: the changes after
    /// `cursor` a read kept (up to `limit × pages + 1` of them, in one snapshot whose counter was
    /// `head`), each page assembled as a pull of its cursor would assemble it. `cutShort` says
    /// the read left changes out after these for its payload budget (``countWithinBudget(_:budget:)``).
    ///
    /// A page followed by more changes (read, or left out) is cut short: it ends at its last
    /// change and says ``hasMore``. The others are complete and end at `head`, even when `head`
    /// is below `cursor` (a lagging replica, a server restored from an older backup): the
    /// client sees that the server is behind what it has seen and refuses the page, instead of
    /// waiting for ever for versions the server will give out again. The list stops at the
    /// first complete page, after `pages` pages, or where the kept changes end.
    package static func assemblePages(
        _ changes: [SyncPulledChange], limit: Int, pages: Int, head: Int64, cursor: SyncCursor, horizon: Int64 = 0,
        cutShort: Bool = false
    ) -> [SyncPage] {
        precondition(!changes.isEmpty || !cutShort, "a read cut for its budget keeps its first change")
        let horizon = horizon > 0 ? horizon : nil
        var result: [SyncPage] = []
        var start = 0
        while true {
            let end = min(start + limit, changes.count)
            let page = Array(changes[start..<end])
            if let last = page.last, end < changes.count || cutShort {
                result.append(
                    SyncPage(
                        changes: page,
                        cursor: SyncCursor(
                            counter: last.version.rawValue,
                            position: SyncCursor.Position(collection: last.collection, key: last.key)),
                        hasMore: true, horizon: horizon))
            } else {
                result.append(SyncPage(changes: page, cursor: SyncCursor(counter: head), hasMore: false, horizon: horizon))
            }
            start = end
            if !result[result.count - 1].hasMore || result.count >= pages || start >= changes.count { return result }
        }
    }

    /// How many of `changes`, in feed order, a read of `budget` payload bytes keeps: each change
    /// whose earlier changes hold fewer than `budget` bytes (tombstones hold none). The first
    /// change is always kept, and so is the one that crosses the budget: the kept changes hold
    /// less than `budget` plus one record, and a record larger than the budget never blocks the
    /// feed. PostgreSQL applies the same rule in SQL.
    package static func countWithinBudget(_ changes: some Sequence<SyncPulledChange>, budget: Int) -> Int {
        var earlier = 0
        var count = 0
        for change in changes {
            guard earlier < budget else { break }
            earlier += change.payloadBytes
            count += 1
        }
        return count
    }
}

extension SyncPulledChange {
    /// The bytes of its payload (0 for a tombstone): what a pull's payload budget counts.
    package var payloadBytes: Int { value.payload?.count ?? 0 }
}

extension Sequence<SyncPulledChange> {
    /// The bytes of every payload among these changes.
    package var payloadBytes: Int { reduce(0) { $0 + $1.payloadBytes } }
}
