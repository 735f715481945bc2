import Foundation

/// A collection as the write path knows it: its id, and whether its changes are captured for
/// sync (format 5, `collections.synced`).
struct CollectionRef: Equatable {
    let id: Int64
    let synced: Bool
}

/// The gateway of the records and the collections (format 1, docs/FORMAT.md: `collections`,
/// `records`, and the version floor `store_meta.last_version`), on the connection of one
/// request.
///
/// Names passed in are already validated and normalized (`RecordNames`). Every SQLite failure
/// leaves as a `RecordStoreError` naming the operation, collection and key, or as
/// `CancellationError` when the running task was cancelled (`StatementRunner`).
struct RecordsTable {
    let runner: StatementRunner

    private var connection: SQLiteConnection { runner.connection }

    // MARK: Collections

    func collectionID(_ name: String) throws -> Int64? {
        try runner.one("SELECT id FROM collections WHERE name = ?1", name, collection: name) { $0.int64(at: 0) }
    }

    /// The id of `name` inside a write transaction: as the connection knows it
    /// (`CollectionRefCache`, which a removal in the transaction clears), else looked up.
    func collectionIDForWriting(_ name: String) throws -> Int64? {
        if let known = connection.collectionRefs.refInWrite(name) { return known.id }
        return try collectionID(name)
    }

    /// The id of `name`, creating the collection when it is not established.
    func establish(_ name: String) throws -> Int64 {
        try establishForWriting(name).id
    }

    /// The id of `name` and whether it is synced (format 5, `collections.synced`), for the
    /// write path: one statement, the lookup a write makes anyway. Only on the writer, whose
    /// store is always migrated to the current format (reads use `collectionID`).
    func collectionForWriting(_ name: String) throws -> CollectionRef? {
        try runner.one("SELECT id, synced FROM collections WHERE name = ?1", name, collection: name) {
            CollectionRef(id: $0.int64(at: 0), synced: $0.int64(at: 1) != 0)
        }
    }

    /// Like `collectionForWriting`, creating the collection when it is not established; a new
    /// collection is synced when its name is registered for sync (`sync_collections`, which
    /// outlives a removed collection).
    ///
    /// The connection keeps what it looked up (`CollectionRefCache`), so a write into a
    /// collection it wrote before, with nothing else written meanwhile, makes no lookup.
    func establishForWriting(_ name: String) throws -> CollectionRef {
        if let known = connection.collectionRefs.refInWrite(name) { return known }
        let ref = try lookUpOrCreate(name)
        connection.collectionRefs.noteInWrite(ref, for: name)
        return ref
    }

    private func lookUpOrCreate(_ name: String) throws -> CollectionRef {
        if let ref = try collectionForWriting(name) { return ref }
        let created = try runner.returning(
            """
            INSERT INTO collections (name, synced)
            VALUES (?1, EXISTS (SELECT 1 FROM sync_collections WHERE name = ?1))
            RETURNING id, synced
            """, name, collection: name
        ) { CollectionRef(id: $0.int64(at: 0), synced: $0.int64(at: 1) != 0) }
        guard let created else { throw runner.malformed(collection: name, "creating the collection returned no id") }
        return created
    }

    func collections() throws -> [CollectionSummary] {
        try runner.all(
            """
            SELECT c.name, count(r.key), coalesce(sum(length(r.payload)), 0)
            FROM collections c LEFT JOIN records r ON r.collection_id = c.id
            GROUP BY c.id ORDER BY c.name
            """
        ) { statement in
            CollectionSummary(
                name: statement.string(at: 0), recordCount: Int(statement.int64(at: 1)),
                payloadBytes: Int(statement.int64(at: 2)))
        }
    }

    /// The number of records of every collection (`count(*)` of the whole table, which SQLite
    /// answers from the pages' cell counts).
    func totalCount() throws -> Int {
        Int(try runner.one("SELECT count(*) FROM records") { $0.int64(at: 0) } ?? 0)
    }

    /// Removes the collection and all its records.
    func removeCollection(_ id: Int64, name: String) throws {
        try IndexesTable(runner: runner).dropDeclaredIndexes(id, collection: name)
        try runner.execute("DELETE FROM records WHERE collection_id = ?1", id, collection: name)
        try runner.execute("DELETE FROM collections WHERE id = ?1", id, collection: name)
        connection.collectionRefs.invalidate()
    }

    // MARK: Reading

    /// Every record of `name`, or nil when the collection is not established.
    /// One statement, so the answer is one consistent snapshot.
    func readAll(_ name: String) throws -> [String: Data]? {
        try runner.withStatement(
            """
            SELECT r.key, r.payload FROM collections c
            LEFT JOIN records r ON r.collection_id = c.id WHERE c.name = ?1
            """, name, collection: name
        ) { statement in
            guard try statement.step() else { return nil }
            var rows: [String: Data] = [:]
            if statement.isNull(at: 0) { return rows }
            repeat {
                rows[try runner.key(statement, at: 0, collection: name)] = statement.data(at: 1)
            } while try statement.step()
            return rows
        }
    }

    /// One record. A collection the connection knows (`CollectionRefCache`) is read by its id,
    /// the answer kept only when the snapshot read is the one the id was noted at; otherwise
    /// one statement reads the collection with the record, and the connection notes it.
    func record(_ name: String, key: String) throws -> StoredRecord? {
        try lookUp(
            name, key: key,
            direct: "SELECT payload, version FROM records WHERE collection_id = ?1 AND key = ?2",
            joined: """
                SELECT c.id, r.payload, r.version FROM collections c
                LEFT JOIN records r ON r.collection_id = c.id AND r.key = ?2
                WHERE c.name = ?1
                """
        ) { statement, first in
            StoredRecord(key: key, data: statement.data(at: first), version: RecordVersion(statement.int64(at: first + 1)))
        }
    }

    /// The payload of one record, or nil when there is none: `record(_:key:)` without reading
    /// the version or making a `StoredRecord` (point reads by `value`).
    func payload(_ name: String, key: String) throws -> Data? {
        try lookUp(
            name, key: key,
            direct: "SELECT payload FROM records WHERE collection_id = ?1 AND key = ?2",
            joined: """
                SELECT c.id, r.payload FROM collections c
                LEFT JOIN records r ON r.collection_id = c.id AND r.key = ?2
                WHERE c.name = ?1
                """
        ) { statement, first in statement.data(at: first) }
    }

    /// One record of `name` by key, as `read` reads it from its columns starting at `first`.
    /// `direct` selects those columns by collection id and key (`?1`, `?2`); `joined` selects
    /// the collection's id and then the same columns from a left join on its name, so that a
    /// record that is absent reads NULL there (every column `read` reads is `NOT NULL`).
    private func lookUp<T>(
        _ name: String, key: String, direct: StaticString, joined: StaticString, _ read: (Statement, Int32) -> T
    ) throws -> T? {
        // A version that moved on before this read began (someone committed, and this
        // connection has read since) already says the id cannot be trusted: one statement then.
        if let (id, version) = connection.collectionRefs.candidate(name), version == nil || connection.dataVersion == version {
            let found = try runner.one(direct, id, key, collection: name, key: key) { read($0, 0) }
            if version == nil || connection.dataVersion == version { return found }
        }
        let row = try runner.one(joined, name, key, collection: name, key: key) { statement -> (id: Int64, value: T?) in
            let id = statement.int64(at: 0)
            guard !statement.isNull(at: 1) else { return (id, nil) }
            return (id, read(statement, 1))
        }
        guard let row else { return nil }
        connection.collectionRefs.note(id: row.id, for: name, at: connection.dataVersion)
        return row.value
    }

    /// Records of `name` in key order strictly after `after`, at most `limit`; nil when the
    /// collection is not established.
    func page(_ name: String, after: String?, limit: Int) throws -> [StoredRecord]? {
        guard let id = try collectionID(name) else { return nil }
        return try runner.all(
            """
            SELECT key, payload, version FROM records
            WHERE collection_id = ?1 AND (?2 IS NULL OR key > ?2) ORDER BY key LIMIT ?3
            """, id, after, limit, collection: name) { [runner] in try Self.storedRecord($0, runner: runner, collection: name) }
    }

    /// Calls `body` for each record of `name` in key order; false when not established.
    func forEachRecord(_ name: String, _ body: (StoredRecord) throws -> Void) throws -> Bool {
        try forEachRecordPayload(name) { key, payload, version in
            try body(StoredRecord(key: key, data: Data(payload), version: version))
            return true
        }
    }

    /// `forEachRecord` without a `Data` per record: `body` gets each key, its payload (borrowed:
    /// valid only during the call) and its version, in key order, and returns false to stop.
    /// False when `name` is not established.
    func forEachRecordPayload(
        _ name: String, _ body: (String, UnsafeRawBufferPointer, RecordVersion) throws -> Bool
    ) throws -> Bool {
        guard let id = try collectionID(name) else { return false }
        // Not the cached statement: `body` may itself read through this connection.
        let statement = try runner.run(collection: name) {
            try Statement(
                connection: connection.handle,
                sql: "SELECT key, payload, version FROM records WHERE collection_id = ?1 ORDER BY key",
                persistent: false)
        }
        try runner.run(collection: name) { try statement.bind(id, at: 1) }
        while try runner.run(collection: name, { try statement.step() }),
            try body(
                try runner.key(statement, at: 0, collection: name), statement.bytes(at: 1),
                RecordVersion(statement.int64(at: 2))) {}
        return true
    }

    /// Every key and version of `name` (for conflict checks and replacement).
    func versions(_ id: Int64, collection: String) throws -> [String: RecordVersion] {
        var versions: [String: RecordVersion] = [:]
        try runner.each("SELECT key, version FROM records WHERE collection_id = ?1", id, collection: collection) {
            versions[try runner.key($0, at: 0, collection: collection)] = RecordVersion($0.int64(at: 1))
        }
        return versions
    }

    /// The version of one record, or nil when it does not exist.
    func version(_ id: Int64, collection: String, key: String) throws -> RecordVersion? {
        try runner.one(
            "SELECT version FROM records WHERE collection_id = ?1 AND key = ?2", id, key, collection: collection, key: key
        ) { RecordVersion($0.int64(at: 0)) }
    }

    /// Whether the stored payload of one record equals `data` byte for byte, and the record's
    /// version; nil when the record does not exist. (Tells an insert from an overwrite, skips
    /// unchanged payloads and gives the version after the write, in one lookup, for
    /// `WriteContext.applyReporting`.)
    func storedPayload(
        _ id: Int64, collection: String, key: String, comparedTo data: Data
    ) throws -> (equal: Bool, version: Int64)? {
        try runner.one(
            "SELECT payload = ?3, version FROM records WHERE collection_id = ?1 AND key = ?2",
            id, key, data, collection: collection, key: key
        ) { ($0.int64(at: 0) != 0, $0.int64(at: 1)) }
    }

    /// `collectionForWriting` and `storedPayload(_:collection:key:comparedTo:)` of one record
    /// in one statement, for a write of a single record that reports what it did
    /// (`WriteContext.applyReporting`): nil when the collection is not established.
    func collectionForWriting(
        _ name: String, record key: String, comparedTo data: Data
    ) throws -> (ref: CollectionRef, stored: (equal: Bool, version: Int64)?)? {
        try runner.one(
            """
            SELECT c.id, c.synced, r.version IS NOT NULL, r.payload = ?3, r.version
            FROM collections c LEFT JOIN records r ON r.collection_id = c.id AND r.key = ?2
            WHERE c.name = ?1
            """, name, key, data, collection: name, key: key
        ) { statement in
            let ref = CollectionRef(id: statement.int64(at: 0), synced: statement.int64(at: 1) != 0)
            guard statement.int64(at: 2) != 0 else { return (ref, nil) }
            return (ref, (statement.int64(at: 3) != 0, statement.int64(at: 4)))
        }
    }

    /// The stored keys that are not valid UTF-8, by collection, as text with U+FFFD for the
    /// invalid bytes (at most `limit`): what SQLite's integrity check does not look at.
    func keysNotUTF8(limit: Int) throws -> [(collection: String, key: String)] {
        var found: [(collection: String, key: String)] = []
        try runner.each("SELECT c.name, r.key FROM records r JOIN collections c ON c.id = r.collection_id") { statement in
            guard found.count < limit, statement.validString(at: 1) == nil else { return }
            found.append((statement.string(at: 0), statement.string(at: 1)))
        }
        return found
    }

    /// The record of a row `key, payload, version` of `collection` (a key that is not valid
    /// UTF-8 throws, see `StatementRunner.key`).
    static func storedRecord(_ statement: Statement, runner: StatementRunner, collection: String) throws -> StoredRecord {
        StoredRecord(
            key: try runner.key(statement, at: 0, collection: collection), data: statement.data(at: 1),
            version: RecordVersion(statement.int64(at: 2)))
    }

    // MARK: Writing

    /// Inserts or overwrites one record. Returns false (and writes nothing) when the stored
    /// payload is already byte-for-byte equal. A new record gets `insertVersion`, a changed one
    /// its previous version + 1.
    ///
    /// A version at `Int64.max` has no next one: SQLite's `+` would overflow into a
    /// floating-point value, which the `INTEGER` column keeps as it is and reads back as
    /// `Int64.max` again, so the overwrite would silently keep its version. The `CASE` gives
    /// NULL instead, the column's `NOT NULL` refuses it, and `StatementRunner` reports
    /// `malformedRecord` (``maximumVersionMessage``).
    func upsert(_ id: Int64, collection: String, key: String, data: Data, insertVersion: Int64) throws -> Bool {
        try runner.execute(
            """
            INSERT INTO records (collection_id, key, payload, version) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (collection_id, key) DO UPDATE
            SET payload = excluded.payload,
                version = CASE WHEN records.version < 9223372036854775807 THEN records.version + 1 END
            WHERE records.payload IS NOT excluded.payload
            """, id, key, data, insertVersion, collection: collection, key: key)
    }

    /// SQLite's message when a write would give a record no version: the `CASE` of `upsert`
    /// and `upsertAtStoredFloor` found a version, or the version floor, at `Int64.max`.
    static let maximumVersionMessage = "NOT NULL constraint failed: records.version"

    /// Like `upsert`, for a transaction that has not read the version floor: a new record
    /// gets the stored floor + 1, read by the statement itself (one statement instead of two
    /// for a single save).
    func upsertAtStoredFloor(_ id: Int64, collection: String, key: String, data: Data) throws -> Bool {
        try runner.execute(
            """
            INSERT INTO records (collection_id, key, payload, version)
            VALUES (?1, ?2, ?3, (
                SELECT CASE WHEN value < 9223372036854775807 THEN value + 1 END
                FROM store_meta WHERE name = 'last_version'))
            ON CONFLICT (collection_id, key) DO UPDATE
            SET payload = excluded.payload,
                version = CASE WHEN records.version < 9223372036854775807 THEN records.version + 1 END
            WHERE records.payload IS NOT excluded.payload
            """, id, key, data, collection: collection, key: key)
    }

    /// Inserts a record expected to be absent. Returns false, writing nothing, when the key
    /// exists.
    func insertIfAbsent(_ id: Int64, collection: String, key: String, data: Data, version: Int64) throws -> Bool {
        try runner.execute(
            """
            INSERT INTO records (collection_id, key, payload, version) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (collection_id, key) DO NOTHING
            """, id, key, data, version, collection: collection, key: key)
    }

    /// Overwrites a record only if it still has version `expected` and a different payload;
    /// returns its new version, or nil when nothing was written (the record is unchanged, has
    /// another version, or does not exist).
    ///
    /// No `RETURNING`: the new version is `expected + 1` whenever the statement changed a row,
    /// and SQLite runs a `RETURNING` statement through an ephemeral table of its own (a B-tree
    /// and pager opened and closed per statement: a quarter of this statement's time in T2).
    func updateIfVersion(_ id: Int64, collection: String, key: String, data: Data, expected: Int64) throws -> Int64? {
        let next = try version(after: expected, collection: collection, key: key)
        return try runner.execute(
            """
            UPDATE records SET payload = ?3, version = ?4 + 1
            WHERE collection_id = ?1 AND key = ?2 AND version = ?4 AND payload IS NOT ?3
            """, id, key, data, expected, collection: collection, key: key
        ) ? next : nil
    }

    /// The version a record at `version` gets when it is overwritten: `version + 1`, or
    /// `malformedRecord` for `Int64.max`, which no write gives (only a damaged or hand-edited
    /// file holds it), instead of a trap or SQLite's overflow into a floating-point version.
    func version(after version: Int64, collection: String, key: String) throws -> Int64 {
        guard version < Int64.max else {
            throw runner.malformed(collection: collection, key: key, "the record's version \(version) is the largest there is")
        }
        return version + 1
    }

    /// Removes one record; returns the version it had, or nil when it did not exist.
    /// (A lookup, then the removal: two plain statements cost less than one with `RETURNING`,
    /// see `updateIfVersion`; inside the write transaction nothing changes between them.)
    func remove(_ id: Int64, collection: String, key: String) throws -> Int64? {
        guard let version = try version(id, collection: collection, key: key) else { return nil }
        guard try runner.execute(
            "DELETE FROM records WHERE collection_id = ?1 AND key = ?2", id, key, collection: collection, key: key)
        else { throw runner.malformed(collection: collection, key: key, "the record was found, but removing it removed nothing") }
        return version.rawValue
    }

    /// The highest version in a collection, or nil when it holds no records.
    func highestVersion(_ id: Int64, collection: String) throws -> Int64? {
        try runner.one("SELECT max(version) FROM records WHERE collection_id = ?1", id, collection: collection) {
            $0.isNull(at: 0) ? nil : $0.int64(at: 0)
        }
    }

    // MARK: The version floor

    /// The version floor: at least every version a removed record ever had.
    func lastVersion() throws -> Int64 {
        let floor = try runner.one("SELECT value FROM store_meta WHERE name = 'last_version'") { $0.int64(at: 0) }
        guard let floor else { throw runner.malformed("the store has no version floor (store_meta.last_version)") }
        return floor
    }

    func setLastVersion(_ version: Int64) throws {
        try runner.execute("UPDATE store_meta SET value = ?1 WHERE name = 'last_version'", version)
    }
}
