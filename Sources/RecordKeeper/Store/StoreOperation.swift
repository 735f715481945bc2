/// A kind of store request, as errors and events name it: `.open`, `.read`, `.apply`, …
///
/// ```swift
/// catch let error as RecordStoreError where error.operation == .open { … }
/// ```
public struct StoreOperation: Hashable, Sendable, CustomStringConvertible {
    /// A stable name, such as `"apply"`.
    public let name: String
    /// How a sentence about a failure names what was being done.
    let purpose: Purpose

    init(_ name: String, _ purpose: Purpose) {
        self.name = name
        self.purpose = purpose
    }

    public var description: String { name }

    public static func == (lhs: StoreOperation, rhs: StoreOperation) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    /// What an operation does, for error sentences ("Could not save to collection …").
    enum Purpose: Sendable {
        case open, read, save, delete, replace, remove, list, inspect, backUp, index
    }

    /// Opening the store file (creating it, checking and migrating its format).
    public static let open = StoreOperation("open", .open)
    /// ``RecordStore/read(_:)``.
    public static let read = StoreOperation("read", .read)
    /// ``RecordStore/value(_:key:)``.
    public static let value = StoreOperation("value", .read)
    /// ``RecordStore/record(_:key:)``.
    public static let record = StoreOperation("record", .read)
    /// ``RecordStore/records(_:after:limit:)``.
    public static let records = StoreOperation("records", .read)
    /// Reading a collection with versions (``RecordStore/versionedRecords(_:)``).
    public static let versionedRecords = StoreOperation("versionedRecords", .read)
    /// Reading every record of a collection with its version.
    public static let allRecords = StoreOperation("allRecords", .read)
    /// Iterating records one at a time in a transaction or snapshot.
    public static let forEachRecord = StoreOperation("forEachRecord", .read)
    /// ``RecordStore/query(_:_:)`` and ``RecordRepository/query(where:orderBy:limit:after:)``.
    public static let query = StoreOperation("query", .read)
    /// ``RecordStore/count(_:where:)``, ``RecordStore/exists(_:where:)`` and their repository forms.
    public static let count = StoreOperation("count", .read)
    /// ``RecordStore/declareIndex(_:on:)``, ``RecordStore/dropIndex(_:on:)``.
    public static let index = StoreOperation("index", .index)
    /// ``RecordStore/snapshot(_:)``.
    public static let snapshot = StoreOperation("snapshot", .read)
    /// ``RecordStore/collections()``.
    public static let collections = StoreOperation("collections", .list)
    /// ``RecordStore/put(_:key:data:)``.
    public static let put = StoreOperation("put", .save)
    /// ``RecordStore/apply(_:changes:expecting:enqueue:)``.
    public static let apply = StoreOperation("apply", .save)
    /// ``RecordStore/write(_:)``.
    public static let write = StoreOperation("write", .save)
    /// Deleting one record: ``RecordStore/delete(_:key:ifVersion:)``,
    /// ``RecordRepository/delete(_:onConflict:enqueue:)``.
    public static let delete = StoreOperation("delete", .delete)
    /// ``RecordStore/replace(_:values:onlyIfAbsent:)``.
    public static let replace = StoreOperation("replace", .replace)
    /// ``RecordStore/removeCollection(_:)``.
    public static let removeCollection = StoreOperation("removeCollection", .remove)
    /// ``RecordStore/info()``.
    public static let info = StoreOperation("info", .inspect)
    /// ``RecordStore/integrityCheck()``.
    public static let integrityCheck = StoreOperation("integrityCheck", .inspect)
    /// Following a collection's changes (``RecordStore/changes(in:)``).
    public static let changes = StoreOperation("changes", .read)
    /// ``RecordStore/backup(to:overwrite:)``.
    public static let backup = StoreOperation("backup", .backUp)
    /// Queuing outbox operations (``RecordStore/enqueue(_:)``, ``RecordTransaction/enqueue(_:)``).
    public static let enqueue = StoreOperation("enqueue", .save)
    /// ``Outbox/pending()``.
    public static let outboxPending = StoreOperation("outbox.pending", .read)
    /// ``Outbox/deadLetters()``.
    public static let outboxDeadLetters = StoreOperation("outbox.deadLetters", .read)
    /// ``Outbox/requeue(_:)``.
    public static let outboxRequeue = StoreOperation("outbox.requeue", .save)
    /// ``Outbox/discard(_:)``.
    public static let outboxDiscard = StoreOperation("outbox.discard", .remove)
    /// An outbox processor claiming due operations.
    public static let outboxClaim = StoreOperation("outbox.claim", .save)
    /// An outbox processor recording a delivery.
    public static let outboxDelivered = StoreOperation("outbox.delivered", .save)
    /// An outbox processor recording a failed attempt.
    public static let outboxFailed = StoreOperation("outbox.failed", .save)
    /// An outbox processor reading when the next operation is due.
    public static let outboxSchedule = StoreOperation("outbox.schedule", .read)
    /// Reading a collection's item version (``RecordStore/itemVersion(of:)``).
    public static let itemVersion = StoreOperation("itemVersion", .read)
    /// Reading every collection's item version (``RecordStore/itemVersions()``).
    public static let itemVersions = StoreOperation("itemVersions", .read)
    /// A repository recording the item version of its collection.
    public static let setItemVersion = StoreOperation("setItemVersion", .save)
    /// ``RecordStore/close()``, with its truncating checkpoint.
    public static let close = StoreOperation("close", .inspect)
    /// A checkpoint scheduled in the background (copying the write-ahead log into the file).
    public static let checkpoint = StoreOperation("checkpoint", .inspect)
    /// ``RecordSync/start(space:collections:policy:)``.
    public static let syncStart = StoreOperation("sync.start", .save)
    /// ``RecordSync/push()``: reading pending operations and applying the server's outcomes.
    public static let syncPush = StoreOperation("sync.push", .save)
    /// ``RecordSync/pull()``: applying a page of remote changes with its cursor.
    public static let syncPull = StoreOperation("sync.pull", .save)
    /// ``RecordStore/syncStatus()``.
    public static let syncStatus = StoreOperation("sync.status", .read)
    /// ``RecordStore/syncConflicts()``.
    public static let syncConflicts = StoreOperation("sync.conflicts", .read)
    /// ``RecordStore/resolveSyncConflict(_:key:keeping:)``.
    public static let syncResolve = StoreOperation("sync.resolve", .save)
    /// Limiting the database's size (tests that simulate a full disk).
    static let setMaxPageCount = StoreOperation("setMaxPageCount", .inspect)
}
