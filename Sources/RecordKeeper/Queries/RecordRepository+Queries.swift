extension RecordRepository where Item: Queryable {
    /// The items that meet `predicate`, in the order of `orderBy` (ties by record key), at most
    /// `limit`, starting after the page that gave `after`: answered by SQLite over the stored
    /// JSON, decoding only the items returned.
    ///
    /// ```swift
    /// let first = try await words.query(where: Word.dueAt <= .now, orderBy: [Word.dueAt.ascending], limit: 20)
    /// let second = try await words.query(
    ///     where: Word.dueAt <= .now, orderBy: [Word.dueAt.ascending], limit: 20, after: first.next)
    /// ```
    /// The versions of the items returned become the base of later saves, as ``item(_:)``'s do.
    /// Migrates the collection first if it holds items of an older item version.
    /// - Throws: ``QueryError`` naming a field that `Item` does not declare in
    ///   ``Queryable/queryFields``, a value that is not a JSON scalar, a non-positive limit or a
    ///   token of another order; ``RepositoryError`` when a returned record does not decode,
    ///   was written by a newer app (pulled by sync: `newerItemVersion`, with its key) or the
    ///   collection cannot be migrated; ``RecordStoreError``.
    public func query(
        where predicate: ItemPredicate<Item>? = nil, orderBy order: [ItemOrder<Item>] = [], limit: Int? = nil,
        after: QueryPageToken? = nil
    ) async throws -> QueryPage<Item> {
        try await query(where: predicate, orderBy: order, limit: limit, after: after, remembering: .all)
    }

    /// `query(where:orderBy:limit:after:)`, remembering the versions `remembering` says.
    package func query(
        where predicate: ItemPredicate<Item>?, orderBy order: [ItemOrder<Item>], limit: Int?,
        after: QueryPageToken?, remembering: RememberedVersions
    ) async throws -> QueryPage<Item> {
        await takeTurn()
        defer { turns.release() }
        let query = try storedQuery(predicate, order: order, limit: limit, after: after)
        let collection = collection
        // Inline when it is a short walk of a declared index (see `RecordQueries.queryRecords`).
        let (page, newer): (QueryPage<StoredRecord>, [String: Int]) = try await currentQuery(query, inline: true) { engine, query, id in
            try engine.queries.queryRecords(query, collectionID: id, collection: collection)
        } ?? (QueryPage(elements: [], next: nil), [:])
        var items: [Item] = []
        items.reserveCapacity(page.elements.count)
        for record in page.elements {
            // Pulled from a device running a newer app: never decoded as this version's type.
            if let version = newer[record.key] { throw migrator.newerRecordError(key: record.key, version: version) }
            items.append(try Self.decode(record.data, key: record.key, collection: collection, decoder: coder))
        }
        switch remembering {
        case .all:
            for record in page.elements { versions[record.key] = record.version }
        case .unknownOnly:
            for record in page.elements where !versions.knows(record.key) { versions[record.key] = record.version }
        }
        learnStoreWrites()
        return QueryPage(elements: items, next: page.next)
    }

    /// How many items meet `predicate` (all when nil); counted by SQLite, nothing decoded.
    /// - Throws: as ``query(where:orderBy:limit:after:)``.
    public func count(where predicate: ItemPredicate<Item>? = nil) async throws -> Int {
        try await countOrExists(predicate, shape: .count)
    }

    /// True when some item meets `predicate`.
    /// - Throws: as ``query(where:orderBy:limit:after:)``.
    public func exists(where predicate: ItemPredicate<Item>? = nil) async throws -> Bool {
        try await countOrExists(predicate, shape: .exists) != 0
    }

    /// The untyped query a typed one stands for, over the stored JSON: fields checked against
    /// ``Queryable/queryFields`` and named by the key strategy, values written by the coder.
    func storedQuery(
        _ predicate: ItemPredicate<Item>?, order: [ItemOrder<Item>], limit: Int?, after: QueryPageToken?
    ) throws -> RecordQuery {
        let context = ItemQueryContext(paths: storedQueryPaths(), coder: coder)
        do {
            var query = RecordQuery(
                where: try predicate?.build(context),
                orderBy: try order.map { RecordOrder(try context.path($0.path), descending: $0.descending) },
                limit: limit, after: after)
            // Checked before the dates are written, which walks the whole condition.
            try RecordStore.check(query, collection: collection)
            query.predicate = try query.predicate?.writingDates(with: coder, dates: strategies.dates)
            return query
        } catch var error as QueryError {
            error.collection = collection
            throw error
        }
    }

    /// `queryPaths`, made on first use: the declared fields are the same for every query.
    private func storedQueryPaths() -> [FieldPath: FieldPath] {
        if let queryPaths { return queryPaths }
        let snake = strategies.keys == .snakeCase ? SnakeCaseKeys() : nil
        var paths: [FieldPath: FieldPath] = [:]
        for field in Item.queryFields {
            paths[field.path] = snake.map { snake in field.path.mapped(snake.snakeCased) } ?? field.path
        }
        queryPaths = paths
        return paths
    }

    private func countOrExists(_ predicate: ItemPredicate<Item>?, shape: QuerySQL.Shape) async throws -> Int {
        await takeTurn()
        defer { turns.release() }
        let query = try storedQuery(predicate, order: [], limit: nil, after: nil)
        let collection = collection
        return try await currentQuery(query, inline: false) { engine, query, id in
            try engine.queries.countRecords(query, collectionID: id, collection: collection, shape: shape)
        }?.result ?? 0
    }

    /// Runs `body` over the collection in one read transaction, after migrating the collection
    /// if it holds older items (as `currentRecords` does); nil when it is not established.
    /// `inline`: first attempted on the caller's thread (see `RecordStore.performRead`).
    private func currentQuery<T: Sendable>(
        _ query: RecordQuery, inline: Bool, _ body: @escaping @Sendable (RecordEngine, RecordQuery, Int64) throws -> T
    ) async throws -> (result: T, newer: [String: Int])? {
        let name = try RecordNames.collection(collection, operation: .query)
        let current = itemVersion
        for attempt in 0..<ItemMigrator.attempts {
            // With the records' own item versions, in the same transaction: records pulled from
            // an older app are migrated first, and those of a newer app named by the caller.
            let (state, read) = try await store.performRead(.query, collection: name, inline: inline) { source in
                guard let engine = source.engine else { return (StoredItemVersion.absent, (T, RecordItemVersions)?.none) }
                return try engine.queries.query(name, query) { engine, query, id in
                    (try body(engine, query, id), try engine.itemVersions.recordItemVersions(name, above: current))
                }
            }
            let needed = try migrator.needsMigration(state, records: read?.1 ?? .none)
            if needed, attempt == ItemMigrator.attempts - 1 { throw migrator.olderRecordsKeptArriving() }
            if !needed {
                isPrepared = true
                return read.map { ($0.0, $0.1.newer) }
            }
            try await migrate()
        }
        return nil  // not reached: the last attempt returns or throws
    }
}
