extension RecordStore {
    /// Declares that queries of `collection` select or sort by `field`: the store records it
    /// (format 7) and creates a SQLite expression index over that field of the collection's
    /// payloads, in one write transaction, so that ``query(_:_:)`` searches it instead of
    /// scanning. Establishes the collection if needed; declaring a field twice does nothing.
    ///
    /// ```swift
    /// try await store.declareIndex("words", on: FieldPath("dueAt"))
    /// ```
    /// Every later write of the collection updates the index, and every payload must then be
    /// JSON: a write of another payload fails with ``RecordStoreError/Code/invalidArgument``
    /// (keeping SQLite's "malformed JSON") and stores nothing of that request.
    /// - Returns: false when the field was already declared.
    /// - Throws: ``RecordStoreError``; ``RecordStoreError/Code/invalidArgument`` when a stored
    ///   payload of the collection is not JSON, with ``RecordStoreError/key`` naming that
    ///   record (the first in key order): nothing is declared then.
    @discardableResult
    public nonisolated func declareIndex(_ collection: String, on field: FieldPath) async throws -> Bool {
        try await declareIndexes(collection, on: [field]) > 0
    }

    /// Declares the indexes of `fields` in one write transaction: all of them, or (on any
    /// failure) none. Returns how many were not declared before.
    nonisolated func declareIndexes(_ collection: String, on fields: [FieldPath]) async throws -> Int {
        let name = try RecordNames.collection(collection, operation: .index)
        return try await performWrite(.index, collection: name) { context in
            let id = try context.engine.records.establish(name)
            return try fields.reduce(0) { count, field in
                try context.engine.indexes.declareIndex(id, collection: name, field: field) ? count + 1 : count
            }
        }
    }

    /// Drops the index of `field` declared for `collection` (its queries then scan).
    /// - Returns: false when no such index was declared; nothing is written then.
    /// - Throws: ``RecordStoreError``.
    @discardableResult
    public nonisolated func dropIndex(_ collection: String, on field: FieldPath) async throws -> Bool {
        let name = try RecordNames.collection(collection, operation: .index)
        let isStore = try await performRead(.index, collection: name) { $0.engine != nil }
        guard isStore else { return false }
        return try await performWrite(.index, collection: name) { context in
            guard let id = try context.engine.records.collectionID(name) else { return false }
            return try context.engine.indexes.dropIndex(id, collection: name, field: field)
        }
    }

    /// The fields `collection` declared an index on, sorted; empty when it declared none or is
    /// not established.
    /// - Throws: ``RecordStoreError``.
    public nonisolated func declaredIndexes(_ collection: String) async throws -> [FieldPath] {
        let name = try RecordNames.collection(collection, operation: .index)
        return try await performRead(.index, collection: name) { source in
            guard let engine = source.engine, let id = try engine.records.collectionID(name) else { return [] }
            return try engine.indexes.declaredIndexes(id, collection: name)
        }
    }
}

extension RecordRepository where Item: Queryable {
    /// Declares indexes on `fields` of the collection (see ``RecordStore/declareIndex(_:on:)``),
    /// named by the repository's key strategy.
    ///
    /// ```swift
    /// try await words.declareIndexes([Word.dueAt, Word.level])
    /// ```
    /// All of them are declared in one write transaction: on any failure, none is.
    /// - Throws: ``QueryError`` (`undeclaredField`) for a field not in ``Queryable/queryFields``;
    ///   ``RecordStoreError``.
    public func declareIndexes(_ fields: [any QueryField]) async throws {
        let query = try storedQuery(nil, order: fields.map { ItemOrder(path: $0.path, descending: false) }, limit: nil, after: nil)
        _ = try await store.declareIndexes(collection, on: query.order.map(\.field))
    }
}
