/// Pulls of some collections of a space from a server that returns every collection's changes
/// (a ``RecordSyncServer`` without its own filter, a relay too old to know `collections=`):
/// the pages are trimmed to the collections asked for, so a caller that named collections
/// never gets another collection's change, and the page keeps the protocol's shape.
///
/// ```swift
/// let page = try await SyncPullFilter.pull(after: cursor, collections: ["notes"]) { after in
///     try await server.pull(space: "alice", after: after, limit: 1000)
/// }
/// ```
public enum SyncPullFilter {
    /// The most collections one pull may name (a device syncing more pulls them all: `nil`).
    public static let maximumCollections = 100

    /// A page of `collections` only, from the pages `page(after)` returns for every collection.
    ///
    /// A complete page keeps its cursor (the space's counter). A page cut short ends at its
    /// last change kept: the changes of other collections after it are read again by the next
    /// pull, never passed unseen by a cursor the caller cannot check. A page cut short that
    /// keeps nothing is followed by the next one, until one keeps a change or is complete; a
    /// page cut short whose cursor does not move forward is returned trimmed, for the caller's
    /// checks to refuse.
    ///
    /// - Throws: what `page` throws.
    public static func pull(
        after cursor: SyncCursor, collections: Set<String>,
        page: (_ after: SyncCursor) async throws -> SyncPage
    ) async throws -> SyncPage {
        var after = cursor
        while true {
            let full = try await page(after)
            guard full.hasMore, full.cursor > after else { return trimmed(full, to: collections) }
            let kept = trimmed(full, to: collections)
            if !kept.changes.isEmpty { return kept }
            after = full.cursor
        }
    }

    /// `page` with the changes of `collections` only; a page cut short ends at its last change
    /// kept (or keeps its cursor when it keeps none). The page's compaction horizon stays: a
    /// resync's last page carries it, and the device removes the records it no longer holds.
    static func trimmed(_ page: SyncPage, to collections: Set<String>) -> SyncPage {
        guard page.changes.contains(where: { !collections.contains($0.collection) }) else { return page }
        let kept = page.changes.filter { collections.contains($0.collection) }
        guard page.hasMore, let last = kept.last else {
            return SyncPage(changes: kept, cursor: page.cursor, hasMore: page.hasMore, horizon: page.horizon)
        }
        return SyncPage(
            changes: kept,
            cursor: SyncCursor(
                counter: last.version.rawValue, position: SyncCursor.Position(collection: last.collection, key: last.key)),
            hasMore: true, horizon: page.horizon)
    }
}
