import Foundation

// The conditional writes of the repositories (`RecordRepository`, `DocumentRepository`,
// `StoredValue`): they need each upsert's version afterwards, not the report of the public
// `apply`, so they take the conditional write directly, without its per-key lookups.

extension RecordStore {
    /// Applies `changes` only if every key in `expected` still has the stated version (nil:
    /// must not exist), otherwise throws ``RecordConflict`` and writes nothing; returns the
    /// version of every upserted key after the write (unchanged payloads keep theirs).
    /// A library write (``StoredValue``'s): it teaches no repository its versions, so a
    /// repository holding the record conflicts instead of overwriting it unseen.
    nonisolated(nonsending) func applyReturningVersions(
        _ collection: String, changes: RecordChanges, expecting expected: [String: RecordVersion?]
    ) async throws -> [String: RecordVersion] {
        let input = try ValidatedChanges(collection, changes: changes, operation: .apply)
        let expected = try ValidatedChanges.normalizedVersions(expected, collection: input.collection, operation: .apply)
        let inline = mayWriteInline(input.upserts.count + input.removals.count)
        return try await performWrite(.apply, collection: input.collection, inline: inline) { context in
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
    nonisolated(nonsending) func applyReturningVersions(
        _ input: ValidatedChanges, expectations: [RecordVersion??],
        checking check: (@Sendable (RecordTransaction) throws -> Void)? = nil,
        unlessItemVersion itemVersion: (version: Int, coding: String?)? = nil, enqueue queued: ValidatedMessages? = nil
    ) async throws -> [RecordVersion?] {
        let inline = mayWriteInline(input.upserts.count + (queued?.messages.count ?? 0))
        return try await performWrite(.apply, collection: input.collection, inline: inline) { context in
            if let itemVersion,
               let ref = try context.engine.itemVersions.collectionID(
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
    /// ``RecordTransaction/apply(_:changes:expecting:enqueue:)`` returning only the version of
    /// every upserted key after the write: the conditional write without the report's lookups.
    func applyReturningVersions(
        _ collection: String, changes: RecordChanges, expecting expected: [String: RecordVersion?]
    ) throws -> [String: RecordVersion] {
        let input = try ValidatedChanges(collection, changes: changes, operation: .apply)
        let expected = try ValidatedChanges.normalizedVersions(expected, collection: input.collection, operation: .apply)
        try checkUsable(input.collection, .apply)
        return try context.apply(input.collection, upserts: input.upserts, removals: input.removals, expecting: expected)
    }
}
