public import Foundation

/// A conditional write found records changed since the versions it was based on.
///
/// Nothing of the write was stored. Load the records again, decide how to merge, and retry,
/// or write unconditionally if overwriting is what you want.
///
/// ```swift
/// do {
///     try await store.apply("notes", changes: changes, expecting: ["today": loadedVersion])
/// } catch let conflict as RecordConflict {
///     print("changed meanwhile:", conflict.keys)
/// }
/// ```
public struct RecordConflict: Error, Sendable, Equatable, LocalizedError {
    /// The collection written to.
    public let collection: String
    /// The keys whose stored version differs from the expected one, sorted.
    public let keys: [String]
    /// For each conflicting key, the version stored now (nil: the record does not exist).
    public let currentVersions: [String: RecordVersion?]

    /// Creates a conflict value.
    public init(collection: String, currentVersions: [String: RecordVersion?]) {
        self.collection = collection
        self.currentVersions = currentVersions
        self.keys = currentVersions.keys.sorted()
    }

    public var errorDescription: String? {
        let shown = keys.prefix(5).map(RecordStoreError.quoted).joined(separator: ", ")
        let more = keys.count > 5 ? " and \(keys.count - 5) more" : ""
        return "Could not save to collection \(RecordStoreError.quoted(collection)): "
            + "\(shown)\(more) changed since they were loaded; nothing was written."
    }

    public var recoverySuggestion: String? {
        "Load the records again, merge, and save once more."
    }
}

extension RecordStore {
    /// Applies `changes` only if every key in `expected` still has the stated version, where
    /// nil means "must not exist". Otherwise writes nothing and throws ``RecordConflict``.
    ///
    /// Keys changed but not named in `expected` are written unconditionally.
    /// - Returns: the version of every upserted key after the write (unchanged payloads keep
    ///   their version).
    /// - Throws: ``RecordConflict`` or ``RecordStoreError``; either way nothing is written.
    @discardableResult
    public nonisolated(nonsending) func apply(
        _ collection: String, changes: RecordChanges, expecting expected: [String: RecordVersion?]
    ) async throws -> [String: RecordVersion] {
        let input = try ValidatedChanges(collection, changes: changes, operation: "apply")
        let expected = try ValidatedChanges.normalizedVersions(expected, collection: input.collection, operation: "apply")
        return try await apply(input, expecting: expected)
    }

    /// `apply(_:changes:expecting:)` for input already validated, with expectations keyed by
    /// the normalized keys.
    nonisolated(nonsending) func apply(
        _ input: ValidatedChanges, expecting expected: [String: RecordVersion?]
    ) async throws -> [String: RecordVersion] {
        let inline = mayWriteInline(input.upserts.count + input.removals.count)
        return try await performWrite("apply", collection: input.collection, inline: inline) { context in
            try context.apply(
                input.collection, upserts: input.upserts, removals: input.removals, expecting: expected)
        }
    }

    /// Upserts validated input, each with its expectation beside it (nil: unconditional;
    /// `.some(nil)`: must be absent), without a dictionary on either side (for repositories).
    /// Returns each upsert's version afterwards, in input order.
    nonisolated(nonsending) func apply(
        _ input: ValidatedChanges, expectations: [RecordVersion??]
    ) async throws -> [RecordVersion?] {
        let inline = mayWriteInline(input.upserts.count)
        return try await performWrite("apply", collection: input.collection, inline: inline) { context in
            try context.apply(
                input.collection, upserts: input.upserts, expectations: expectations, removals: [], checks: [:])
        }
    }

    /// Every record of `collection` with its version, in key order (UTF-8 bytes), or nil when
    /// the collection is not established.
    public nonisolated func allRecords(_ collection: String) async throws -> [StoredRecord]? {
        let name = try RecordNames.collection(collection, operation: "allRecords")
        return try await performRead("allRecords", collection: name) { source in
            guard let engine = source.engine else { return nil }
            var records: [StoredRecord] = []
            let exists = try engine.forEachRecord(name) { records.append($0) }
            return exists ? records : nil
        }
    }

    /// Every record of `collection` with its version, by key, or nil when not established.
    public nonisolated func versionedRecords(_ collection: String) async throws -> [String: StoredRecord]? {
        let name = try RecordNames.collection(collection, operation: "versionedRecords")
        return try await performRead("versionedRecords", collection: name) { source in
            guard let engine = source.engine else { return nil }
            var records: [String: StoredRecord] = [:]
            let exists = try engine.forEachRecord(name) { records[$0.key] = $0 }
            return exists ? records : nil
        }
    }
}

extension RecordTransaction {
    /// Applies `changes` only if every key in `expected` still has the stated version (nil:
    /// must not exist); see ``RecordStore/apply(_:changes:expecting:)``.
    @discardableResult
    public func apply(
        _ collection: String, changes: RecordChanges, expecting expected: [String: RecordVersion?]
    ) throws -> [String: RecordVersion] {
        let input = try ValidatedChanges(collection, changes: changes, operation: "apply")
        let expected = try ValidatedChanges.normalizedVersions(expected, collection: input.collection, operation: "apply")
        try checkUsable(input.collection, "apply")
        return try context.apply(input.collection, upserts: input.upserts, removals: input.removals, expecting: expected)
    }
}
