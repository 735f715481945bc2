import Foundation

extension RecordStore {
    /// Removes one record and says whether there was one: deleting a key that is not stored is
    /// not an error, it returns false and writes nothing.
    ///
    /// With `ifVersion`, it removes the record only if it still has that version (the one
    /// ``record(_:key:)`` gave); otherwise, also when the record is gone, it removes nothing
    /// and throws ``RecordConflict`` (``RecordConflict/Action/delete``).
    ///
    /// When there is no store yet, or the collection is not established, it creates nothing.
    /// ``apply(_:changes:expecting:enqueue:)`` removes many keys at once and reports each (``AppliedChanges/notFound``).
    ///
    /// ```swift
    /// if try await store.delete("notes", key: "today") == false {
    ///     print("there was no note for today")
    /// }
    /// ```
    /// - Returns: true when a record was removed.
    /// - Throws: ``RecordConflict`` (only with `ifVersion`); ``RecordStoreError`` naming the
    ///   operation `delete`, the collection and the key. Nothing is removed when it throws.
    @discardableResult
    public nonisolated func delete(_ collection: String, key: String, ifVersion version: RecordVersion? = nil) async throws -> Bool {
        let name = try RecordNames.collection(collection, operation: .delete)
        let key = try RecordNames.key(key, collection: name, operation: .delete)
        do {
            let isStore = try await performRead(.delete, collection: name) { $0.engine != nil }
            guard isStore else {
                if let version { throw WriteContext.goneConflict(name, key: key, expected: version) }
                return false
            }
            return try await performWrite(.delete, collection: name, inline: mayWriteInline(1), origin: .recordAPI) {
                context in
                try context.delete(name, key: key, ifVersion: version)
            }
        } catch var error as RecordStoreError where error.key == nil && error.operation == .delete {
            error.key = key
            throw error
        }
    }

    /// A repository's delete: `check` first (the item version), then the removal with its
    /// expectation (nil: unconditional; `.some(nil)`: must be absent) and `queued`, in one
    /// transaction whose versions no other repository learns. A record already gone is no
    /// conflict, whatever version was expected: what the delete asked for holds, and it
    /// returns false (`queued` is still queued, as for a key that was never stored).
    nonisolated(nonsending) func delete(
        _ collection: String, key: String, expecting expected: RecordVersion??, enqueue queued: ValidatedMessages,
        checking check: @Sendable (RecordTransaction) throws -> Void
    ) async throws -> Bool {
        let name = try RecordNames.collection(collection, operation: .delete)
        let key = try RecordNames.key(key, collection: name, operation: .delete)
        do {
            return try await performWrite(.delete, collection: name, inline: mayWriteInline(1 + queued.messages.count)) {
                context in
                let transaction = RecordTransaction(context: context)
                defer { transaction.invalidate() }
                // Nothing stored at the key (never, or removed meanwhile): nothing to remove and
                // no conflict. A collection that does not exist (never made, or removed
                // meanwhile) stays so: not even the repository's item version is recorded.
                guard let ref = try context.engine.records.collectionForWriting(name) else {
                    try context.enqueue(queued)
                    return false
                }
                try check(transaction)
                guard try context.engine.records.version(ref.id, collection: name, key: key) != nil else {
                    try context.enqueue(queued)
                    return false
                }
                let before = context.removedRecords
                try context.apply(name, upserts: [], removals: [key], expecting: expected.map { [key: $0] })
                try context.enqueue(queued)
                return context.removedRecords > before
            }
        } catch var error as RecordStoreError where error.key == nil && error.operation == .delete {
            error.key = key
            throw error
        }
    }
}

extension RecordTransaction {
    /// Removes one record as part of this transaction and says whether there was one (see
    /// ``RecordStore/delete(_:key:ifVersion:)``); establishes nothing.
    @discardableResult
    public func delete(_ collection: String, key: String) throws -> Bool {
        try checkUsable(collection, .delete)
        let name = try RecordNames.collection(collection, operation: .delete)
        let key = try RecordNames.key(key, collection: name, operation: .delete)
        return try context.delete(name, key: key, ifVersion: nil)
    }
}

extension WriteContext {
    /// Removes `key` of an established collection, only at `version` when given; true when a
    /// record was removed. A collection that is not established stays so.
    func delete(_ collection: String, key: String, ifVersion version: RecordVersion?) throws -> Bool {
        guard try engine.records.collectionForWriting(collection) != nil else {
            if let version { throw Self.goneConflict(collection, key: key, expected: version) }
            return false
        }
        let before = removedRecords
        try apply(collection, upserts: [], removals: [key], expecting: version.map { [key: $0] })
        return removedRecords > before
    }

    /// The conflict of a conditional delete of a record that is not stored at all.
    static func goneConflict(_ collection: String, key: String, expected: RecordVersion) -> RecordConflict {
        RecordConflict(
            collection: collection, currentVersions: [key: nil], expectedVersions: [key: expected], action: .delete)
    }
}
