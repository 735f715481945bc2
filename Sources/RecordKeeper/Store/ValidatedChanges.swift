import Foundation

/// One record a write upserts: its key and payload.
///
/// A struct, not a `(key: String, data: Data)` tuple: an array of tuples is destroyed by the
/// runtime's generic tuple walker (`tuple_destroy`, then a value witness for each field), which
/// was about a third of a single `put`'s own Swift samples (W2); a struct's array is destroyed
/// through its own compiled witness.
struct RecordUpsert {
    let key: String
    let data: Data
}

/// Validated, normalized input of a write, checked before any transaction begins so that a
/// bad key anywhere in a request writes nothing.
struct ValidatedChanges {
    let collection: String
    let upserts: [RecordUpsert]
    let removals: [String]
    /// True when normalization changed a key, so the stored keys differ from the input's bytes.
    let renamedKeys: Bool

    init(_ collection: String, changes: RecordChanges, operation: StoreOperation) throws {
        self.collection = try RecordNames.collection(collection, operation: operation)
        guard !changes.isFullState else {
            // Applying it would keep records it says are gone: replacing is `replace`'s.
            throw RecordStoreError(
                code: .invalidArgument, operation: operation, collection: collection,
                detail: "a full state from a change stream replaces the collection: pass its upserts to replace(_:values:)")
        }
        (upserts, renamedKeys) = try Self.validate(changes.upserts, collection: collection, operation: operation)
        removals = try changes.removals.map {
            try RecordNames.key($0, collection: collection, operation: operation)
        }
    }

    /// One upsert (a `put`): no dictionary of changes is built.
    init(_ collection: String, key: String, data: Data, operation: StoreOperation) throws {
        self.collection = try RecordNames.collection(collection, operation: operation)
        let (stored, changed) = try RecordNames.keyNotingChange(key, collection: collection, operation: operation)
        upserts = [RecordUpsert(key: stored, data: data)]
        removals = []
        renamedKeys = changed
    }

    init(_ collection: String, values: [String: Data], operation: StoreOperation) throws {
        self.collection = try RecordNames.collection(collection, operation: operation)
        (upserts, renamedKeys) = try Self.validate(values, collection: collection, operation: operation)
        removals = []
    }

    /// Upserts from a list in which a key may appear more than once: the later entry wins.
    /// The result is sorted by key (no dictionary is built).
    init(_ collection: String, entries: [RecordUpsert], operation: StoreOperation) throws {
        if entries.count == 1 {
            // A repository's single save: as `put`, no list to sort.
            self = try ValidatedChanges(collection, key: entries[0].key, data: entries[0].data, operation: operation)
            return
        }
        self = try ValidatedChanges(
            collection: RecordNames.collection(collection, operation: operation),
            lastWins: entries, operation: operation)
    }

    /// `entries` (more than one) sorted by key, the later of equal keys kept.
    private init(collection: String, lastWins entries: [RecordUpsert], operation: StoreOperation) throws {
        self.collection = collection
        var indexed: [(key: String, data: Data, index: Int)] = []
        indexed.reserveCapacity(entries.count)
        var renamed = false
        for (index, entry) in entries.enumerated() {
            let (stored, changed) = try RecordNames.keyNotingChange(entry.key, collection: collection, operation: operation)
            if changed { renamed = true }
            indexed.append((stored, entry.data, index))
        }
        indexed.sort { $0.key == $1.key ? $0.index < $1.index : $0.key < $1.key }
        var result: [RecordUpsert] = []
        result.reserveCapacity(indexed.count)
        for entry in indexed {
            if let last = result.last, last.key == entry.key {
                result[result.count - 1] = RecordUpsert(key: entry.key, data: entry.data)
            } else {
                result.append(RecordUpsert(key: entry.key, data: entry.data))
            }
        }
        upserts = result
        removals = []
        renamedKeys = renamed
    }

    /// Expected versions with their keys checked and normalized.
    static func normalizedVersions(
        _ versions: [String: RecordVersion?], collection: String, operation: StoreOperation
    ) throws -> [String: RecordVersion?] {
        var result: [String: RecordVersion?] = [:]
        for (key, version) in versions {
            result[try RecordNames.key(key, collection: collection, operation: operation)] = .some(version)
        }
        return result
    }

    /// Keys checked and normalized; sorted when there are many, so that a bulk write fills
    /// the B-tree in order instead of splitting pages at random. (For NFC strings Swift's `<`
    /// is code-point order, which is the UTF-8 byte order SQLite uses, with a fast path for
    /// ASCII.) `renamed` tells whether normalization changed any key.
    private static func validate(
        _ values: [String: Data], collection: String, operation: StoreOperation
    ) throws -> (entries: [RecordUpsert], renamed: Bool) {
        var result: [RecordUpsert] = []
        result.reserveCapacity(values.count)
        var renamed = false
        for (key, data) in values {
            let (stored, changed) = try RecordNames.keyNotingChange(key, collection: collection, operation: operation)
            if changed { renamed = true }
            result.append(RecordUpsert(key: stored, data: data))
        }
        if result.count > 64 { result.sort { $0.key < $1.key } }
        return (result, renamed)
    }
}
