public import Foundation

/// The handle of one write transaction, given to the body of ``RecordStore/write(_:)``.
///
/// Every change made through it commits together when the body returns, or not at all when
/// the body (or the commit) throws. It is valid only inside that body and only on the thread
/// running it; using it afterwards throws ``RecordStoreError/Code/misuse``.
public final class RecordTransaction {
    let context: WriteContext
    private var isValid = true

    init(context: WriteContext) {
        self.context = context
    }

    func invalidate() { isValid = false }

    /// All records of `collection` as this transaction sees them, or nil if not established.
    public func read(_ collection: String) throws -> [String: Data]? {
        let name = try checked(collection, "read")
        return try context.engine.readAll(name)
    }

    /// One payload as this transaction sees it.
    public func value(_ collection: String, key: String) throws -> Data? {
        let name = try checked(collection, "value")
        let key = try RecordNames.key(key, collection: name, operation: "value")
        return try context.engine.record(name, key: key)?.data
    }

    /// One record with its version as this transaction sees it.
    public func record(_ collection: String, key: String) throws -> StoredRecord? {
        let name = try checked(collection, "record")
        let key = try RecordNames.key(key, collection: name, operation: "record")
        return try context.engine.record(name, key: key)
    }

    /// Calls `body` for every record of `collection` as this transaction sees it, in key
    /// order, one at a time. Returns false (calling nothing) when the collection is not
    /// established.
    @discardableResult
    public func forEachRecord(in collection: String, _ body: (StoredRecord) throws -> Void) throws -> Bool {
        let name = try checked(collection, "forEachRecord")
        return try context.engine.forEachRecord(name, body)
    }

    /// Inserts or overwrites one record.
    public func put(_ collection: String, key: String, data: Data) throws {
        var changes = RecordChanges()
        changes[key] = data
        try apply(collection, changes: changes)
    }

    /// Applies a record-level change (see ``RecordStore/apply(_:changes:)``).
    public func apply(_ collection: String, changes: RecordChanges) throws {
        _ = try checked(collection, "apply")
        let input = try ValidatedChanges(collection, changes: changes, operation: "apply")
        try context.apply(input.collection, upserts: input.upserts, removals: input.removals)
    }

    /// Replaces the whole content of `collection` with `values`.
    public func replace(_ collection: String, values: [String: Data]) throws {
        _ = try checked(collection, "replace")
        let input = try ValidatedChanges(collection, values: values, operation: "replace")
        try context.replace(input.collection, values: input.upserts)
    }

    /// Removes `collection` and all its records.
    public func removeCollection(_ collection: String) throws {
        let name = try checked(collection, "removeCollection")
        try context.removeCollection(name)
    }

    func checkUsable(_ collection: String, _ operation: String) throws {
        _ = try checked(collection, operation)
    }

    private func checked(_ collection: String, _ operation: String) throws -> String {
        guard isValid else {
            throw RecordStoreError(
                code: .misuse, operation: operation, collection: collection,
                detail: "a RecordTransaction was used after its write body returned")
        }
        try Task.checkCancellation()
        return try RecordNames.collection(collection, operation: operation)
    }
}

/// A consistent read snapshot, given to the body of ``RecordStore/snapshot(_:)``.
///
/// Valid only inside that body; using it afterwards throws ``RecordStoreError/Code/misuse``.
public final class RecordSnapshot {
    /// Nil when there is no store yet: the snapshot is empty.
    private let engine: RecordEngine?
    private var isValid = true

    init(engine: RecordEngine?) {
        self.engine = engine
    }

    func invalidate() { isValid = false }

    /// The established collections with their sizes, sorted by name.
    public func collections() throws -> [CollectionSummary] {
        try checkValid("collections")
        return try engine?.collections() ?? []
    }

    /// All records of `collection`, or nil if not established.
    public func read(_ collection: String) throws -> [String: Data]? {
        try checkValid("read")
        let name = try RecordNames.collection(collection, operation: "read")
        return try engine?.readAll(name)
    }

    /// One payload, or nil.
    public func value(_ collection: String, key: String) throws -> Data? {
        try record(collection, key: key)?.data
    }

    /// One record with its version, or nil.
    public func record(_ collection: String, key: String) throws -> StoredRecord? {
        try checkValid("record")
        let name = try RecordNames.collection(collection, operation: "record")
        let key = try RecordNames.key(key, collection: name, operation: "record")
        return try engine?.record(name, key: key)
    }

    /// Calls `body` for every record of `collection` in key order, one at a time, without
    /// loading the collection into memory. Returns false (calling nothing) when the collection
    /// is not established.
    @discardableResult
    public func forEachRecord(in collection: String, _ body: (StoredRecord) throws -> Void) throws -> Bool {
        try checkValid("forEachRecord")
        let name = try RecordNames.collection(collection, operation: "forEachRecord")
        guard let engine else { return false }
        return try engine.forEachRecord(name) { record in
            try Task.checkCancellation()
            try body(record)
        }
    }

    private func checkValid(_ operation: String) throws {
        guard isValid else {
            throw RecordStoreError(
                code: .misuse, operation: operation,
                detail: "a RecordSnapshot was used after its snapshot body returned")
        }
    }
}
