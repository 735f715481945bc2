/// A ``RecordSyncServer`` that reads several consecutive pages of a pull in one request to its
/// storage: one snapshot, one statement, instead of one round of each per page. The relay uses
/// it to fill an answer of several pages (`pages=N`) for a device catching up.
///
/// The pages are what `pull(space:after:limit:collections:)` would answer for each page's
/// cursor in that snapshot: each holds at most `limit` changes, each but the last says
/// ``SyncPage/hasMore``, the next starts at the cursor of the one before, and the list stops at
/// the first page without more, or after `pages` pages.
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
    /// The consecutive pages of `limit` changes that `changes` (up to `limit × pages + 1`
    /// changes after `cursor`, read in one snapshot whose counter was `head`) make, each
    /// assembled as a pull of its cursor would assemble it: the same pages, in one read.
    package static func assemblePages(
        _ changes: [SyncPulledChange], limit: Int, pages: Int, head: Int64, cursor: SyncCursor, horizon: Int64 = 0
    ) -> [SyncPage] {
        var result: [SyncPage] = []
        var start = 0
        var pageCursor = cursor
        repeat {
            // A page's changes and the one after them, which says there is more.
            let end = min(start + limit + 1, changes.count)
            let page = assemble(
                Array(changes[min(start, changes.count)..<end]), limit: limit, head: head, cursor: pageCursor,
                horizon: horizon)
            result.append(page)
            start += limit
            pageCursor = page.cursor
        } while result[result.count - 1].hasMore && result.count < pages
        return result
    }
}
