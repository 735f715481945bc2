import Foundation

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
    ///
    /// A row that is not a field path this library writes (another program's write, a damaged
    /// file) is left out: a declared index is only a choice of plan, and no query this library
    /// builds could use an index of such a path, so every query answers as without it (a scan).
    /// Trusting it would trap (`FieldPath(validSegments:)`) or put its text into SQL. So is a
    /// row whose SQLite index is gone (dropped by another program): a query naming it in
    /// `INDEXED BY` would fail ("no such index") instead of scanning.
    private func readDeclaredIndexes(_ id: Int64, collection: String) throws -> [FieldPath] {
        let fields: [FieldPath]
        do {
            fields = try runner.all(
                "SELECT field FROM declared_indexes WHERE collection_id = ?1 ORDER BY field", id, collection: collection
            ) { FieldPath(stored: $0.string(at: 0)) }.compactMap { $0 }
        } catch let error as RecordStoreError where error.sqliteMessage?.contains("declared_indexes") == true {
            return []
        }
        guard !fields.isEmpty else { return [] }
        let existing = Set(try runner.all(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'records'", collection: collection
        ) { $0.string(at: 0) })
        return fields.filter { existing.contains(DeclaredIndex(collectionID: id, field: $0).name) }
    }

    /// Records the index of `field` for collection `id` and creates it (in the caller's write
    /// transaction). False when it was already declared.
    ///
    /// Creating the index reads the field of every stored payload: a payload that is not JSON
    /// fails it with `invalidArgument`, naming that record's key (the first in key order) and
    /// keeping SQLite's "malformed JSON"; the caller's transaction then rolls back.
    func declareIndex(_ id: Int64, collection: String, field: FieldPath) throws -> Bool {
        let inserted = try runner.execute(
            "INSERT INTO declared_indexes (collection_id, field) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            id, field.description, collection: collection)
        do {
            try runner.run(collection: collection) { try connection.execute(DeclaredIndex(collectionID: id, field: field).createSQL) }
        } catch var error as RecordStoreError where error.sqliteMessage == "malformed JSON" {
            error.code = .invalidArgument
            error.key = try firstPayloadNotJSON(id, collection: collection)
            error.detail =
                (error.key == nil ? "a payload of the collection is not JSON" : "the record's payload is not JSON")
                + ", so field \(RecordStoreError.quoted(field.description)) cannot be indexed (a declared index needs "
                + "every payload of the collection to be JSON); nothing was declared"
            throw error
        }
        return inserted
    }

    /// Whether a declared index's expression can read `payload`: SQLite's JSON functions parse
    /// it (`json_extract` fails a statement on a payload they refuse, and with it the write).
    func indexesCanRead(_ payload: Data, collection: String) throws -> Bool {
        do {
            _ = try runner.one("SELECT json_type(CAST(?1 AS TEXT))", payload, collection: collection) { _ in true }
            return true
        } catch let error as RecordStoreError where error.sqliteMessage == "malformed JSON" {
            return false
        }
    }

    /// The key of the first record of collection `id`, in key order, whose payload SQLite's JSON
    /// functions refuse (as the expression of a declared index does); nil when there is none.
    func firstPayloadNotJSON(_ id: Int64, collection: String) throws -> String? {
        // The scan runs in key order and stops at the first payload it cannot parse: the key
        // after the last one it read.
        var last = ""  // Keys are never empty.
        do {
            try runner.each(
                "SELECT key, json_type(CAST(payload AS TEXT)) FROM records WHERE collection_id = ?1 ORDER BY key",
                id, collection: collection
            ) { last = $0.string(at: 0) }
            return nil
        } catch let error as RecordStoreError where error.sqliteMessage == "malformed JSON" {
            return try runner.one(
                "SELECT key FROM records WHERE collection_id = ?1 AND key > ?2 ORDER BY key LIMIT 1",
                id, last, collection: collection
            ) { $0.string(at: 0) }
        }
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
