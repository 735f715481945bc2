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
    /// What the refused write was doing, for its message.
    public enum Action: Sendable, Equatable {
        /// Inserting or updating records, possibly removing others too ("Could not save to
        /// collection …; nothing was written.").
        case save
        /// Only removing records ("Could not delete from collection …; nothing was removed.").
        case delete
    }

    /// The collection written to.
    public let collection: String
    /// What the write was doing: saving (upserts, with or without removals) or only deleting.
    public let action: Action
    /// The keys whose stored version differs from the expected one, sorted.
    public let keys: [String]
    /// For each conflicting key, the version stored now (nil: the record does not exist).
    public let currentVersions: [String: RecordVersion?]
    /// For each conflicting key, the version the write expected (nil: that the record does
    /// not exist), when known.
    public let expectedVersions: [String: RecordVersion?]

    /// Creates a conflict value.
    public init(
        collection: String, currentVersions: [String: RecordVersion?],
        expectedVersions: [String: RecordVersion?] = [:], action: Action = .save
    ) {
        self.collection = collection
        self.action = action
        self.currentVersions = currentVersions
        self.expectedVersions = expectedVersions
        self.keys = currentVersions.keys.sorted()
    }

    /// Says, for up to five keys, what was found instead of what was expected: a record that
    /// must not exist "already exists, at version 3"; one that was loaded at version 2 "changed
    /// since it was loaded (version 2, now 3)" or "was removed since it was loaded".
    public var errorDescription: String? {
        let shown = keys.prefix(5).map(describe).joined(separator: "; ")
        let more = keys.count > 5 ? "; and \(keys.count - 5) more" : ""
        let (verb, nothing) =
            switch action {
            case .save: ("save to", "nothing was written")
            case .delete: ("delete from", "nothing was removed")
            }
        return "Could not \(verb) collection \(RecordStoreError.quoted(collection)): \(shown)\(more); \(nothing)."
    }

    private func describe(_ key: String) -> String {
        let name = RecordStoreError.quoted(key)
        let current = currentVersions[key] ?? nil
        guard let expectation = expectedVersions[key] else {
            return current.map { "\(name) changed since it was loaded (now version \($0.rawValue))" }
                ?? "\(name) was removed since it was loaded"
        }
        switch (expectation, current) {
        case (nil, let current?):
            return "\(name) already exists, at version \(current.rawValue)"
        case (let expected?, let current?):
            return "\(name) changed since it was loaded (version \(expected.rawValue), now \(current.rawValue))"
        case (let expected?, nil):
            return "\(name) was removed since it was loaded (at version \(expected.rawValue))"
        case (nil, nil):
            return "\(name) is not stored, as expected"  // Not a conflict; never constructed so.
        }
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
        let input = try ValidatedChanges(collection, changes: changes, operation: .apply)
        let expected = try ValidatedChanges.normalizedVersions(expected, collection: input.collection, operation: .apply)
        return try await apply(input, expecting: expected)
    }

    /// `apply(_:changes:expecting:)` for input already validated, with expectations keyed by
    /// the normalized keys.
    nonisolated(nonsending) func apply(
        _ input: ValidatedChanges, expecting expected: [String: RecordVersion?]
    ) async throws -> [String: RecordVersion] {
        let inline = mayWriteInline(input.upserts.count + input.removals.count)
        return try await performWrite(.apply, collection: input.collection, inline: inline, teachesRepositories: true) {
            context in
            try context.apply(
                input.collection, upserts: input.upserts, removals: input.removals, expecting: expected)
        }
    }

    /// Upserts validated input, each with its expectation beside it (nil: unconditional;
    /// `.some(nil)`: must be absent), without a dictionary on either side (for repositories).
    /// Returns each upsert's version afterwards, in input order.
    ///
    /// `check`, when given, runs first in the same transaction (repositories check and record
    /// their item version there); with `itemVersion`, only when the collection's recorded item
    /// version and payload coding are not those (found by the same lookup that finds the
    /// collection).
    /// `queued` is enqueued in the same transaction.
    nonisolated(nonsending) func apply(
        _ input: ValidatedChanges, expectations: [RecordVersion??],
        checking check: (@Sendable (RecordTransaction) throws -> Void)? = nil,
        unlessItemVersion itemVersion: (version: Int, coding: String?)? = nil, enqueue queued: ValidatedMessages? = nil
    ) async throws -> [RecordVersion?] {
        let inline = mayWriteInline(input.upserts.count + (queued?.messages.count ?? 0))
        return try await performWrite(.apply, collection: input.collection, inline: inline) { context in
            if let itemVersion,
               let ref = try context.engine.collectionID(
                   input.collection, ifItemVersion: itemVersion.version, coding: itemVersion.coding) {
                context.remember(ref, for: input.collection)
            } else if let check {
                let transaction = RecordTransaction(context: context)
                defer { transaction.invalidate() }
                try check(transaction)
            }
            let versions = try context.apply(
                input.collection, upserts: input.upserts, expectations: expectations, removals: [], checks: [:])
            if let queued { try context.enqueue(queued) }
            return versions
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
        let input = try ValidatedChanges(collection, changes: changes, operation: .apply)
        let expected = try ValidatedChanges.normalizedVersions(expected, collection: input.collection, operation: .apply)
        try checkUsable(input.collection, .apply)
        return try context.apply(input.collection, upserts: input.upserts, removals: input.removals, expecting: expected)
    }
}
