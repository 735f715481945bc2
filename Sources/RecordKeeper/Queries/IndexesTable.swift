/// The gateway of declared indexes (format 7, docs/FORMAT.md: `declared_indexes` and the
/// indexes on `records` it names), on the connection of one request: which fields of a
/// collection are indexed, declaring and dropping one. The connection keeps what it read
/// (see `declaredIndexes`).
struct IndexesTable {
    let runner: StatementRunner

    private var connection: SQLiteConnection { runner.connection }

    /// The fields collection `id` declared an index on, in field order. Empty for a store of a
    /// format before 7 (read as it is, never migrated by a read): it has none.
    ///
    /// Outside a write transaction the answer is kept on the connection under the schema
    /// cookie it was read with: every change of the declared indexes creates or drops an index
    /// in the same transaction, which moves the cookie for every connection (this store's,
    /// another store's, another process's), so one `PRAGMA schema_version` re-checks it. Inside
    /// a write transaction it is read afresh and not kept (the cookie may still roll back).
    func declaredIndexes(_ id: Int64, collection: String) throws -> [FieldPath] {
        guard !connection.isInWriteTransaction else { return try readDeclaredIndexes(id, collection: collection) }
        let version = try runner.run(collection: collection) { try connection.schemaVersion() }
        if connection.declaredIndexCache.schemaVersion == version, let fields = connection.declaredIndexCache.fields[id] {
            return fields
        }
        let fields = try readDeclaredIndexes(id, collection: collection)
        if connection.declaredIndexCache.schemaVersion != version { connection.declaredIndexCache = (version, [:]) }
        connection.declaredIndexCache.fields[id] = fields
        return fields
    }

    /// `declaredIndexes` read from table `declared_indexes`.
    private func readDeclaredIndexes(_ id: Int64, collection: String) throws -> [FieldPath] {
        do {
            return try runner.all(
                "SELECT field FROM declared_indexes WHERE collection_id = ?1 ORDER BY field", id, collection: collection
            ) {
                // Only validated paths are ever stored.
                FieldPath(validSegments: $0.string(at: 0).split(separator: ".").map(String.init))
            }
        } catch let error as RecordStoreError where error.sqliteMessage?.contains("declared_indexes") == true {
            return []
        }
    }

    /// Records the index of `field` for collection `id` and creates it (in the caller's write
    /// transaction). False when it was already declared.
    func declareIndex(_ id: Int64, collection: String, field: FieldPath) throws -> Bool {
        let inserted = try runner.execute(
            "INSERT INTO declared_indexes (collection_id, field) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            id, field.description, collection: collection)
        try runner.run(collection: collection) { try connection.execute(DeclaredIndex(collectionID: id, field: field).createSQL) }
        return inserted
    }

    /// Forgets the index of `field` for collection `id` and drops it. False when it was not declared.
    func dropIndex(_ id: Int64, collection: String, field: FieldPath) throws -> Bool {
        let deleted = try runner.execute(
            "DELETE FROM declared_indexes WHERE collection_id = ?1 AND field = ?2", id, field.description,
            collection: collection)
        try runner.run(collection: collection) { try connection.execute(DeclaredIndex(collectionID: id, field: field).dropSQL) }
        return deleted
    }

    /// Drops every declared index of collection `id` (the collection is being removed).
    func dropDeclaredIndexes(_ id: Int64, collection: String) throws {
        for field in try declaredIndexes(id, collection: collection) {
            _ = try dropIndex(id, collection: collection, field: field)
        }
    }
}
