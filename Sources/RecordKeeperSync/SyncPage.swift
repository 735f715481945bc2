/// One page of a pull: changes committed after the cursor pulled from, oldest first.
public struct SyncPage: Sendable, Hashable, Codable {
    /// The changes, ordered by server version, then collection, then key. Each record appears
    /// at most once, with its latest value.
    public var changes: [SyncPulledChange]
    /// The cursor to pull from next; store it with these changes in one local transaction.
    public var cursor: SyncCursor
    /// `true` when the page was cut short, by its limit or by ``payloadBudget``: pull again
    /// from ``cursor``.
    public var hasMore: Bool
    /// The space's compaction horizon, when the server compacted it (docs/SYNC.md
    /// "Compaction"): tombstones and operation outcomes up to this counter were deleted, so a
    /// pull from the start delivers no record deleted at or below it. `nil` when nothing was
    /// compacted (or the server does not compact). A device pulling from the start uses it to
    /// remove the records it holds that were deleted and compacted meanwhile.
    public var horizon: Int64?

    /// The largest `limit` a pull accepts (larger pulls page).
    public static let maximumLimit = 100_000

    /// The payload bytes a server reads for one pull (one read of several pages, too): a page
    /// stops at the first change whose earlier changes hold this much (4 MiB), so a space of
    /// large records pages by size instead of reading `limit` of them into memory at once. The
    /// change that crosses the budget is still delivered, so a page holds less than the budget
    /// plus one record, and a record larger than the budget never blocks the feed. A page cut
    /// for its size ends at its last change and says ``hasMore``, as one cut by its limit does.
    public static let payloadBudget = 4 << 20

    /// The longest a live pull may ask to be held
    /// (``RecordSyncServer/pull(space:after:limit:collections:wait:)``).
    public static let maximumWait: Duration = .seconds(300)

    /// How often the default live pull of a server that cannot hold a request pulls again.
    public static let defaultPollInterval: Duration = .seconds(1)

    /// Creates a page.
    public init(changes: [SyncPulledChange], cursor: SyncCursor, hasMore: Bool, horizon: Int64? = nil) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
        self.horizon = horizon
    }
}

/// A record's current value on the server, as a pull delivers it.
public struct SyncPulledChange: Sendable, Hashable, Codable {
    /// The record's collection.
    public var collection: String
    /// The record's key.
    public var key: String
    /// The payload, or a tombstone for a deleted record.
    public var value: SyncValue
    /// The record's server version (the counter of the operation that wrote it).
    public var version: SyncServerVersion
    /// The item version the payload was written at (``SyncChange/itemVersion``); `nil` for
    /// byte-level data, and for records written before servers kept item versions.
    public var itemVersion: Int?

    /// Creates a pulled change.
    public init(
        collection: String, key: String, value: SyncValue, version: SyncServerVersion, itemVersion: Int? = nil
    ) {
        self.collection = collection
        self.key = key
        self.value = value
        self.version = version
        self.itemVersion = itemVersion
    }
}
