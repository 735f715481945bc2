public import Foundation

/// The handle of one write transaction, given to the body of ``RecordStore/write(_:)``.
///
/// Every change made through it commits together when the body returns, or not at all when
/// the body (or the commit) throws. It is valid only inside that body and only on the thread
/// running it; using it afterwards throws ``RecordStoreError/Code/misuse``.
public final class RecordTransaction {
    let context: WriteContext
    private let reads: RecordReads

    init(context: WriteContext) {
        self.context = context
        self.reads = RecordReads(engine: context.engine, handle: "RecordTransaction", body: "write")
    }

    func invalidate() { reads.isValid = false }

    /// The established collections with their sizes, sorted by name, as this transaction sees them.
    public func collections() throws -> [CollectionSummary] {
        try reads.collections()
    }

    /// All records of `collection` as this transaction sees them, or nil if not established.
    public func read(_ collection: String) throws -> [String: Data]? {
        try reads.read(collection)
    }

    /// One payload as this transaction sees it.
    public func value(_ collection: String, key: String) throws -> Data? {
        try reads.record(collection, key: key, operation: .value)?.data
    }

    /// One record with its version as this transaction sees it.
    public func record(_ collection: String, key: String) throws -> StoredRecord? {
        try reads.record(collection, key: key, operation: .record)
    }

    /// Calls `body` for every record of `collection` as this transaction sees it, in key
    /// order, one at a time. Returns false (calling nothing) when the collection is not
    /// established.
    @discardableResult
    public func forEachRecord(in collection: String, _ body: (StoredRecord) throws -> Void) throws -> Bool {
        try reads.forEachRecord(in: collection, body)
    }

    /// Inserts or overwrites one record.
    public func put(_ collection: String, key: String, data: Data) throws {
        var changes = RecordChanges()
        changes[key] = data
        try applyWithoutReport(collection, changes: changes)
    }

    /// Applies a record-level change, optionally conditional on versions, and queues outbox
    /// messages, as part of this transaction (see ``RecordStore/apply(_:changes:expecting:enqueue:)``).
    ///
    /// - Parameters:
    ///   - collection: The collection to change.
    ///   - changes: The records to upsert and the keys to remove.
    ///   - expected: Per key, the version it must still have (nil: must not exist); nil (the
    ///     default) writes unconditionally.
    ///   - messages: Outbox messages to queue; they commit with the rest of this transaction.
    /// - Returns: what became of each named key and the version of every upserted key
    ///   afterwards (one point lookup per upserted key, except for a change of a single record;
    ///   ``put(_:key:data:)`` makes none).
    /// - Throws: ``RecordConflict`` when an expectation does not hold; ``RecordStoreError``
    ///   otherwise. Rethrown from the body, like every error, it rolls back the whole
    ///   transaction, so nothing of the change is stored; a body that catches it and returns
    ///   commits what the transaction wrote, which may include part of this change.
    @discardableResult
    public func apply(
        _ collection: String, changes: RecordChanges, expecting expected: [String: RecordVersion?]? = nil,
        enqueue messages: [OutboxMessage] = []
    ) throws -> AppliedChanges {
        _ = try reads.checked(collection, .apply)
        let input = try ValidatedChanges(collection, changes: changes, operation: .apply)
        let expected = try expected.map {
            try ValidatedChanges.normalizedVersions($0, collection: input.collection, operation: .apply)
        }
        let queued = try ValidatedMessages(messages, operation: .apply)
        let applied = try context.applyReporting(
            input.collection, upserts: input.upserts, removals: input.removals, expecting: expected)
        try context.enqueue(queued)
        return applied
    }

    /// ``apply(_:changes:expecting:enqueue:)`` without its report: one statement per record,
    /// no lookup (for ``put(_:key:data:)``, migrations and the tool's bulk import).
    package func applyWithoutReport(_ collection: String, changes: RecordChanges) throws {
        _ = try reads.checked(collection, .apply)
        let input = try ValidatedChanges(collection, changes: changes, operation: .apply)
        try context.apply(input.collection, upserts: input.upserts, removals: input.removals)
    }

    /// Replaces the whole content of `collection` with `values`.
    public func replace(_ collection: String, values: [String: Data]) throws {
        _ = try reads.checked(collection, .replace)
        let input = try ValidatedChanges(collection, values: values, operation: .replace)
        try context.replace(input.collection, values: input.upserts)
    }

    /// Removes `collection` and all its records.
    public func removeCollection(_ collection: String) throws {
        let name = try reads.checked(collection, .removeCollection)
        try context.removeCollection(name)
    }

    func checkUsable(_ collection: String, _ operation: StoreOperation) throws {
        _ = try reads.checked(collection, operation)
    }

    /// Throws `misuse` after the body returned, or `CancellationError`; for requests that
    /// name no collection (the outbox's `enqueue`).
    func checkUsable(_ operation: StoreOperation) throws {
        _ = try reads.checked(nil, operation)
    }
}

/// A consistent read snapshot, given to the body of ``RecordStore/snapshot(_:)``.
///
/// Valid only inside that body; using it afterwards throws ``RecordStoreError/Code/misuse``.
public final class RecordSnapshot {
    private let reads: RecordReads

    /// `engine` is nil when there is no store yet: the snapshot is then empty.
    init(engine: RecordEngine?) {
        self.reads = RecordReads(engine: engine, handle: "RecordSnapshot", body: "snapshot")
    }

    func invalidate() { reads.isValid = false }

    /// The established collections with their sizes, sorted by name.
    public func collections() throws -> [CollectionSummary] {
        try reads.collections()
    }

    /// All records of `collection`, or nil if not established.
    public func read(_ collection: String) throws -> [String: Data]? {
        try reads.read(collection)
    }

    /// One payload, or nil.
    public func value(_ collection: String, key: String) throws -> Data? {
        try reads.record(collection, key: key, operation: .value)?.data
    }

    /// One record with its version, or nil.
    public func record(_ collection: String, key: String) throws -> StoredRecord? {
        try reads.record(collection, key: key, operation: .record)
    }

    /// Calls `body` for every record of `collection` in key order, one at a time, without
    /// loading the collection into memory. Returns false (calling nothing) when the collection
    /// is not established.
    @discardableResult
    public func forEachRecord(in collection: String, _ body: (StoredRecord) throws -> Void) throws -> Bool {
        try reads.forEachRecord(in: collection, body)
    }

    /// Whether `collection` is established, reading none of its records nor any other
    /// collection's (the tool's export of one collection of a damaged store).
    package func isEstablished(_ collection: String) throws -> Bool {
        try reads.isEstablished(collection)
    }

    /// How many records the store holds in all, counted from the pages' own cell counts
    /// (SQLite's count of a whole table) rather than by walking the records: a walk that a
    /// damaged page cuts short without an error reads fewer (the tool's export checks this).
    package func recordCountOfAllCollections() throws -> Int {
        _ = try reads.checked(nil, .collections)
        return try reads.engine?.records.totalCount() ?? 0
    }
}

/// The reads a transaction and a snapshot share: one implementation, with the check that the
/// handle is still inside its body and the task not cancelled.
final class RecordReads {
    /// Nil for a snapshot of a store that does not exist yet: it reads as empty.
    let engine: RecordEngine?
    /// The public handle's type name and the body it belongs to, for misuse errors.
    private let handle: String
    private let body: String
    var isValid = true

    init(engine: RecordEngine?, handle: String, body: String) {
        self.engine = engine
        self.handle = handle
        self.body = body
    }

    /// The validated collection name, after checking the handle may still be used.
    func checked(_ collection: String?, _ operation: StoreOperation) throws -> String {
        guard isValid else {
            throw RecordStoreError(
                code: .misuse, operation: operation, collection: collection,
                detail: "a \(handle) was used after its \(body) body returned")
        }
        try Task.checkCancellation()
        guard let collection else { return "" }
        return try RecordNames.collection(collection, operation: operation)
    }

    func collections() throws -> [CollectionSummary] {
        _ = try checked(nil, .collections)
        return try engine?.records.collections() ?? []
    }

    func read(_ collection: String) throws -> [String: Data]? {
        let name = try checked(collection, .read)
        return try engine?.records.readAll(name)
    }

    func record(_ collection: String, key: String, operation: StoreOperation) throws -> StoredRecord? {
        let name = try checked(collection, operation)
        let key = try RecordNames.key(key, collection: name, operation: operation)
        return try engine?.records.record(name, key: key)
    }

    func isEstablished(_ collection: String) throws -> Bool {
        let name = try checked(collection, .read)
        return try engine?.records.collectionID(name) != nil
    }

    func forEachRecord(in collection: String, _ body: (StoredRecord) throws -> Void) throws -> Bool {
        let name = try checked(collection, .forEachRecord)
        guard let engine else { return false }
        return try engine.records.forEachRecord(name) { record in
            try Task.checkCancellation()
            try body(record)
        }
    }
}
