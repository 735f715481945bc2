import Foundation
import RecordKeeper

/// What an import did, or would do.
struct ImportCounts: Sendable, Equatable {
    var added = 0
    var changed = 0
    var unchanged = 0
    var removed = 0
    var collections = 0
}

/// Counts what an import would change, reading the store (a snapshot) and writing nothing,
/// in memory that does not grow with the input (the keys are not kept).
///
/// Each record line counts once, against the stored record: a key given twice in one file
/// counts twice against it (the import itself counts each line against the value before it,
/// see ``ImportApplier``). With `--replace`, removals are the stored records of each named
/// collection less the lines whose key is stored (a stored key given twice is subtracted
/// twice).
final class ImportPlanner: ImportVisitor {
    private let lookup: (String, String) throws -> Data?
    private let storedCounts: [String: Int]
    private let replace: Bool
    private var seen: Set<String> = []
    private var matched: [String: Int] = [:]
    private(set) var counts = ImportCounts()

    /// - Parameters:
    ///   - lookup: The stored value of (collection, key), or nil.
    ///   - storedCounts: Records per stored collection, for `--replace`.
    init(lookup: @escaping (String, String) throws -> Data?, storedCounts: [String: Int], replace: Bool) {
        self.lookup = lookup
        self.storedCounts = storedCounts
        self.replace = replace
    }

    func collection(_ name: String) throws {
        if seen.insert(name).inserted { counts.collections += 1 }
    }

    func record(collection: String, key: String, payload: Data) throws {
        guard let stored = try lookup(collection, key) else {
            counts.added += 1
            return
        }
        matched[collection, default: 0] += 1
        if stored == payload { counts.unchanged += 1 } else { counts.changed += 1 }
    }

    func finish() -> ImportCounts {
        if replace {
            for name in seen {
                counts.removed += max(0, (storedCounts[name] ?? 0) - (matched[name] ?? 0))
            }
        }
        return counts
    }
}

/// Writes an import inside one write transaction, in batches of changes per collection.
///
/// Merge: with `classify`, every record is compared with the stored one (counting added,
/// changed, unchanged) and only differences are written; without it (a first pass counted
/// already) records are written as they come and the store skips unchanged payloads.
/// Replace: each named collection is emptied when first seen, then filled. Emptied, not
/// removed: what the store records of the collection besides its records (declared indexes,
/// the item version and payload strategies of its repository) stays, as for an app's
/// `replace`.
final class ImportApplier: ImportVisitor {
    private let transaction: RecordTransaction
    private let replace: Bool
    private let classify: Bool
    private var seen: Set<String> = []
    private var withRecords: Set<String> = []
    private var batchCollection: String?
    private var batch = RecordChanges()
    private var batchCount = 0
    private let batchSize = 1000
    private(set) var counts = ImportCounts()

    init(transaction: RecordTransaction, replace: Bool, classify: Bool) {
        self.transaction = transaction
        self.replace = replace
        self.classify = classify && !replace
    }

    func collection(_ name: String) throws {
        guard seen.insert(name).inserted else { return }
        counts.collections += 1
        if replace {
            try flush()
            try transaction.replace(name, values: [:])
        }
    }

    func record(collection: String, key: String, payload: Data) throws {
        withRecords.insert(collection)
        if classify {
            // What the import holds for the key now: a line of this batch not yet written,
            // else the store (with the batches written before).
            let pending = batchCollection == collection ? batch.upserts[key] : nil
            if let stored = try pending ?? transaction.value(collection, key: key) {
                if stored == payload {
                    counts.unchanged += 1
                    return
                }
                counts.changed += 1
            } else {
                counts.added += 1
            }
        }
        if batchCollection != collection || batchCount >= batchSize {
            try flush()
            batchCollection = collection
        }
        batch[key] = payload
        batchCount += 1
    }

    func finish() throws -> ImportCounts {
        try flush()
        // A collection named without records is established too, as it was in the export.
        for name in seen.subtracting(withRecords).sorted() where !replace {
            try transaction.applyWithoutReport(name, changes: RecordChanges())
        }
        return counts
    }

    private func flush() throws {
        guard let collection = batchCollection, !batch.isEmpty else { return }
        // Not `apply`: the counts are kept here, and its report would cost a lookup per record.
        try transaction.applyWithoutReport(collection, changes: batch)
        batch = RecordChanges()
        batchCount = 0
    }
}
