import Foundation

extension RecordStore {
    /// The records of `collection` that `query` selects, in its order, one page at a time:
    /// answered by SQLite over the payloads' JSON (`json_extract`), not by decoding the
    /// collection. Fields are named as the stored JSON names them. A field with a declared
    /// index (``declareIndex(_:on:)``) is searched through it; any other field is read by a
    /// scan of the collection's records.
    ///
    /// ```swift
    /// var query = RecordQuery(where: RecordField("level") >= 2, orderBy: [RecordField("dueAt").descending], limit: 20)
    /// let first = try await store.query("words", query)
    /// query.after = first.next   // the next 20, even if others wrote meanwhile
    /// ```
    /// An empty page when the collection is not established. Every page of a query comes from
    /// one consistent state of the store.
    /// - Throws: ``QueryError`` for a non-positive limit or a page token of another order;
    ///   ``RecordStoreError`` when the store cannot be read (SQLite's JSON functions fail on a
    ///   payload that is not JSON: the error names the collection).
    public nonisolated func query(_ collection: String, _ query: RecordQuery = RecordQuery()) async throws -> QueryPage<StoredRecord> {
        let name = try RecordNames.collection(collection, operation: .query)
        try Self.check(query, collection: name)
        // Inline on the caller's thread when it is a short walk of a declared index (see
        // `RecordQueries.queryRecords`), like a point read; on a reader's queue otherwise.
        return try await performRead(.query, collection: name, inline: true) { source in
            guard let engine = source.engine else { return QueryPage(elements: [], next: nil) }
            return try engine.queries.query(name, query) { engine, query, id in
                try engine.queries.queryRecords(query, collectionID: id, collection: name)
            }.1 ?? QueryPage(elements: [], next: nil)
        }
    }

    /// How many records of `collection` meet `predicate` (all of them when nil); 0 when the
    /// collection is not established. Counted by SQLite, nothing is decoded.
    /// - Throws: as ``query(_:_:)``.
    public nonisolated func count(_ collection: String, where predicate: RecordPredicate? = nil) async throws -> Int {
        try await countOrExists(collection, predicate, shape: .count)
    }

    /// True when some record of `collection` meets `predicate` (SQLite stops at the first).
    /// - Throws: as ``query(_:_:)``.
    public nonisolated func exists(_ collection: String, where predicate: RecordPredicate? = nil) async throws -> Bool {
        try await countOrExists(collection, predicate, shape: .exists) != 0
    }

    private nonisolated func countOrExists(_ collection: String, _ predicate: RecordPredicate?, shape: QuerySQL.Shape) async throws -> Int {
        let name = try RecordNames.collection(collection, operation: .count)
        let query = RecordQuery(where: predicate)
        try Self.check(query, collection: name)
        return try await performRead(.count, collection: name) { source in
            guard let engine = source.engine else { return 0 }
            return try engine.queries.query(name, query) { engine, query, id in
                try engine.queries.countRecords(query, collectionID: id, collection: name, shape: shape)
            }.1 ?? 0
        }
    }

    /// The lines of SQLite's `EXPLAIN QUERY PLAN` for `query`: for tests and for seeing
    /// whether a declared index answers it (`SEARCH records USING INDEX …`) or a scan does.
    /// Empty when the collection is not established.
    /// - Throws: as ``query(_:_:)``.
    public nonisolated func queryPlan(_ collection: String, _ query: RecordQuery) async throws -> [String] {
        let name = try RecordNames.collection(collection, operation: .query)
        try Self.check(query, collection: name)
        return try await performRead(.query, collection: name) { source in
            guard let engine = source.engine else { return [] }
            return try engine.queries.query(name, query) { engine, query, id in
                try engine.queries.queryPlan(query, collectionID: id, collection: name)
            }.1 ?? []
        }
    }

    /// The deepest nesting of `and`, `or` and `not` a query may have. SQLite's parser refuses
    /// (or, much deeper, the walk of the condition overflows the thread's stack) long before
    /// any condition a person writes; chains of `&&` and `||` are one level, whatever their
    /// length.
    static let maximumNesting = 32

    /// Refuses what no statement could answer, before any is run.
    static func check(_ query: RecordQuery, collection: String) throws(QueryError) {
        if let predicate = query.predicate {
            let nesting = predicate.nesting(upTo: maximumNesting)
            if nesting > maximumNesting {
                throw QueryError(
                    .invalidArgument, fieldName: "", collection: collection,
                    detail: "the condition nests and, or and not more than \(maximumNesting) levels deep (a list of more "
                        + "than 16 conditions counts as 2 levels, of more than 256 as 3); list alternatives in one "
                        + "or([...]) (or use in([...])) instead of nesting them")
            }
        }
        if let (field, what) = query.predicate?.orderedAgainstNull {
            throw QueryError(
                .invalidArgument, field: field, collection: collection,
                detail: "\(what) nil matches no record (nothing is less or greater than a missing value); ask "
                    + "whether the field is missing with == nil, or compare with a value")
        }
        if let limit = query.limit, limit <= 0 {
            throw QueryError(
                .invalidArgument, fieldName: "", collection: collection, detail: "the limit must be positive, not \(limit)")
        }
        if let token = query.after, token.order != query.orderSignature || token.values.count != query.order.count {
            throw QueryError(
                .invalidArgument, fieldName: "", collection: collection,
                detail: "the page token is of a query ordered by \"\(token.order)\", not \"\(query.orderSignature)\"")
        }
    }
}
