import Foundation

/// A collection as the write path knows it: its id, and whether its changes are captured for
/// sync (format 5, `collections.synced`).
struct CollectionRef: Equatable {
    let id: Int64
    let synced: Bool
}

/// The record operations of format 1, as SQL on one connection.
///
/// Names passed in are already validated and normalized (`RecordNames`). Every SQLite failure
/// leaves here as a `RecordStoreError` naming the operation, collection and key, or as
/// `CancellationError` when the running task was cancelled.
struct RecordEngine {
    let connection: SQLiteConnection
    let path: String?
    let operation: StoreOperation

    // MARK: Errors

    /// The error to throw for `failure`: cancellation when SQLite stopped because this task
    /// was cancelled, otherwise the store error with its context.
    func error(_ failure: any Error, collection: String? = nil, key: String? = nil) -> any Error {
        guard let failure = failure as? SQLiteFailure else { return failure }
        if failure.code.matches(.interrupt), Task.isCancelled { return CancellationError() }
        var error = RecordStoreError(failure, operation: operation, collection: collection, key: key, path: path)
        if failure.code.matches(.error), failure.message == "malformed JSON", key == nil, operation == .query || operation == .count {
            // A query reads fields of every payload it considers: one that is not JSON is
            // in the store legitimately (payloads are any bytes), but cannot be queried.
            error.code = .invalidArgument
            error.detail = "a payload of the collection is not JSON, so its fields cannot be queried"
        } else if failure.code.matches(.error), failure.message == "malformed JSON", key != nil {
            // Only a declared index (format 7) reads a payload's JSON while a record is
            // written: its expression fails on a payload that is not JSON. That is the
            // caller's input, refused whole, not a failure of the store.
            error.code = .invalidArgument
            error.detail =
                "the payload is not JSON, and the collection has declared indexes, so its payloads must be JSON "
                + "(drop its indexes to store other payloads)"
        }
        return error
    }

    /// Runs `body`, translating SQLite failures with the given context.
    func run<T>(collection: String? = nil, key: String? = nil, _ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw self.error(error, collection: collection, key: key) }
    }

    // MARK: Collections

    func collectionID(_ name: String) throws -> Int64? {
        try run(collection: name) {
            try connection.withStatement("SELECT id FROM collections WHERE name = ?1") { statement in
                try statement.bind(name, at: 1)
                return try statement.step() ? statement.int64(at: 0) : nil
            }
        }
    }

    /// The id of `name`, creating the collection when it is not established.
    func establish(_ name: String) throws -> Int64 {
        try establishForWriting(name).id
    }

    /// The id of `name` and whether it is synced (format 5, `collections.synced`), for the
    /// write path: one statement, the lookup a write makes anyway. Only on the writer, whose
    /// store is always migrated to the current format (reads use `collectionID`).
    func collectionForWriting(_ name: String) throws -> CollectionRef? {
        try run(collection: name) {
            try connection.withStatement("SELECT id, synced FROM collections WHERE name = ?1") { statement in
                try statement.bind(name, at: 1)
                guard try statement.step() else { return nil }
                return CollectionRef(id: statement.int64(at: 0), synced: statement.int64(at: 1) != 0)
            }
        }
    }

    /// Like `collectionForWriting`, creating the collection when it is not established; a new
    /// collection is synced when its name is registered for sync (`sync_collections`, which
    /// outlives a removed collection).
    func establishForWriting(_ name: String) throws -> CollectionRef {
        if let ref = try collectionForWriting(name) { return ref }
        return try run(collection: name) {
            try connection.withStatement(
                """
                INSERT INTO collections (name, synced)
                VALUES (?1, EXISTS (SELECT 1 FROM sync_collections WHERE name = ?1))
                RETURNING id, synced
                """
            ) { statement in
                try statement.bind(name, at: 1)
                guard try statement.step() else {
                    throw RecordStoreError(
                        code: .malformedRecord, operation: operation, collection: name, path: path,
                        detail: "creating the collection returned no id")
                }
                let ref = CollectionRef(id: statement.int64(at: 0), synced: statement.int64(at: 1) != 0)
                while try statement.step() {}
                return ref
            }
        }
    }

    func collections() throws -> [CollectionSummary] {
        try run {
            try connection.withStatement(
                """
                SELECT c.name, count(r.key), coalesce(sum(length(r.payload)), 0)
                FROM collections c LEFT JOIN records r ON r.collection_id = c.id
                GROUP BY c.id ORDER BY c.name
                """
            ) { statement in
                var result: [CollectionSummary] = []
                while try statement.step() {
                    result.append(
                        CollectionSummary(
                            name: statement.string(at: 0), recordCount: Int(statement.int64(at: 1)),
                            payloadBytes: Int(statement.int64(at: 2))))
                }
                return result
            }
        }
    }

    // MARK: Reading

    /// Every record of `name`, or nil when the collection is not established.
    /// One statement, so the answer is one consistent snapshot.
    func readAll(_ name: String) throws -> [String: Data]? {
        try run(collection: name) {
            try connection.withStatement(
                """
                SELECT r.key, r.payload FROM collections c
                LEFT JOIN records r ON r.collection_id = c.id WHERE c.name = ?1
                """
            ) { statement in
                try statement.bind(name, at: 1)
                guard try statement.step() else { return nil }
                var rows: [String: Data] = [:]
                if statement.isNull(at: 0) { return rows }
                repeat {
                    rows[statement.string(at: 0)] = statement.data(at: 1)
                } while try statement.step()
                return rows
            }
        }
    }

    func record(_ name: String, key: String) throws -> StoredRecord? {
        try run(collection: name, key: key) {
            try connection.withStatement(
                """
                SELECT r.payload, r.version FROM records r JOIN collections c ON c.id = r.collection_id
                WHERE c.name = ?1 AND r.key = ?2
                """
            ) { statement in
                try statement.bind(name, at: 1)
                try statement.bind(key, at: 2)
                guard try statement.step() else { return nil }
                return StoredRecord(
                    key: key, data: statement.data(at: 0), version: RecordVersion(statement.int64(at: 1)))
            }
        }
    }

    /// Records of `name` in key order strictly after `after`, at most `limit`; nil when the
    /// collection is not established.
    func page(_ name: String, after: String?, limit: Int) throws -> [StoredRecord]? {
        guard let id = try collectionID(name) else { return nil }
        return try run(collection: name) {
            try connection.withStatement(
                """
                SELECT key, payload, version FROM records
                WHERE collection_id = ?1 AND (?2 IS NULL OR key > ?2) ORDER BY key LIMIT ?3
                """
            ) { statement in
                try statement.bind(id, at: 1)
                if let after { try statement.bind(after, at: 2) } else { try statement.bindNull(at: 2) }
                try statement.bind(Int64(limit), at: 3)
                var records: [StoredRecord] = []
                while try statement.step() { records.append(Self.storedRecord(statement)) }
                return records
            }
        }
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
        let statement = try run(collection: name) {
            try Statement(
                connection: connection.handle,
                sql: "SELECT key, payload, version FROM records WHERE collection_id = ?1 ORDER BY key",
                persistent: false)
        }
        try run(collection: name) { try statement.bind(id, at: 1) }
        while try run(collection: name, { try statement.step() }),
            try body(statement.string(at: 0), statement.bytes(at: 1), RecordVersion(statement.int64(at: 2))) {}
        return true
    }

    /// Every key and version of `name` (for conflict checks and replacement).
    func versions(_ id: Int64, collection: String) throws -> [String: RecordVersion] {
        try run(collection: collection) {
            try connection.withStatement("SELECT key, version FROM records WHERE collection_id = ?1") {
                statement in
                try statement.bind(id, at: 1)
                var versions: [String: RecordVersion] = [:]
                while try statement.step() {
                    versions[statement.string(at: 0)] = RecordVersion(statement.int64(at: 1))
                }
                return versions
            }
        }
    }

    /// The version of one record, or nil when it does not exist.
    func version(_ id: Int64, collection: String, key: String) throws -> RecordVersion? {
        try run(collection: collection, key: key) {
            try connection.withStatement("SELECT version FROM records WHERE collection_id = ?1 AND key = ?2") {
                statement in
                try statement.bind(id, at: 1)
                try statement.bind(key, at: 2)
                return try statement.step() ? RecordVersion(statement.int64(at: 0)) : nil
            }
        }
    }

    /// Whether the stored payload of one record equals `data` byte for byte, and the record's
    /// version; nil when the record does not exist. (Tells an insert from an overwrite, skips
    /// unchanged payloads and gives the version after the write, in one lookup, for
    /// `WriteContext.applyReporting`.)
    func storedPayload(
        _ id: Int64, collection: String, key: String, comparedTo data: Data
    ) throws -> (equal: Bool, version: Int64)? {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                "SELECT payload = ?3, version FROM records WHERE collection_id = ?1 AND key = ?2"
            ) { statement in
                try statement.bind(id, at: 1)
                try statement.bind(key, at: 2)
                try statement.bind(data, at: 3)
                guard try statement.step() else { return nil }
                return (statement.int64(at: 0) != 0, statement.int64(at: 1))
            }
        }
    }

    /// `collectionForWriting` and `storedPayload(_:collection:key:comparedTo:)` of one record
    /// in one statement, for a write of a single record that reports what it did
    /// (`WriteContext.applyReporting`): nil when the collection is not established.
    func collectionForWriting(
        _ name: String, record key: String, comparedTo data: Data
    ) throws -> (ref: CollectionRef, stored: (equal: Bool, version: Int64)?)? {
        try run(collection: name, key: key) {
            try connection.withStatement(
                """
                SELECT c.id, c.synced, r.version IS NOT NULL, r.payload = ?3, r.version
                FROM collections c LEFT JOIN records r ON r.collection_id = c.id AND r.key = ?2
                WHERE c.name = ?1
                """
            ) { statement in
                try statement.bind(name, at: 1)
                try statement.bind(key, at: 2)
                try statement.bind(data, at: 3)
                guard try statement.step() else { return nil }
                let ref = CollectionRef(id: statement.int64(at: 0), synced: statement.int64(at: 1) != 0)
                guard statement.int64(at: 2) != 0 else { return (ref, nil) }
                return (ref, (statement.int64(at: 3) != 0, statement.int64(at: 4)))
            }
        }
    }

    static func storedRecord(_ statement: Statement) -> StoredRecord {
        StoredRecord(
            key: statement.string(at: 0), data: statement.data(at: 1),
            version: RecordVersion(statement.int64(at: 2)))
    }

    // MARK: Writing

    /// Inserts or overwrites one record. Returns false (and writes nothing) when the stored
    /// payload is already byte-for-byte equal. A new record gets `insertVersion`, a changed one
    /// its previous version + 1.
    func upsert(_ id: Int64, collection: String, key: String, data: Data, insertVersion: Int64) throws -> Bool {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                """
                INSERT INTO records (collection_id, key, payload, version) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (collection_id, key) DO UPDATE
                SET payload = excluded.payload, version = records.version + 1
                WHERE records.payload IS NOT excluded.payload
                """
            ) { statement in
                try bindUpsert(statement, id, key, data, insertVersion)
                try statement.run()
                return connection.changes > 0
            }
        }
    }

    /// Like `upsert`, returning the record's new version, or nil when nothing was written.
    /// (A separate statement: RETURNING costs a little on every row of a bulk write.)
    func upsertReturningVersion(
        _ id: Int64, collection: String, key: String, data: Data, insertVersion: Int64
    ) throws -> Int64? {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                """
                INSERT INTO records (collection_id, key, payload, version) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (collection_id, key) DO UPDATE
                SET payload = excluded.payload, version = records.version + 1
                WHERE records.payload IS NOT excluded.payload
                RETURNING version
                """
            ) { statement in
                try bindUpsert(statement, id, key, data, insertVersion)
                return try returnedVersion(statement)
            }
        }
    }

    /// Like `upsert`, for a transaction that has not read the version floor: a new record
    /// gets the stored floor + 1, read by the statement itself (one statement instead of two
    /// for a single save).
    func upsertAtStoredFloor(_ id: Int64, collection: String, key: String, data: Data) throws -> Bool {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                """
                INSERT INTO records (collection_id, key, payload, version)
                VALUES (?1, ?2, ?3, (SELECT value FROM store_meta WHERE name = 'last_version') + 1)
                ON CONFLICT (collection_id, key) DO UPDATE
                SET payload = excluded.payload, version = records.version + 1
                WHERE records.payload IS NOT excluded.payload
                """
            ) { statement in
                try bindUpsert(statement, id, key, data)
                try statement.run()
                return connection.changes > 0
            }
        }
    }

    /// Like `upsertAtStoredFloor`, returning the record's new version, or nil when nothing was
    /// written: for a write that reports the versions it gave.
    func upsertAtStoredFloorReturningVersion(_ id: Int64, collection: String, key: String, data: Data) throws -> Int64? {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                """
                INSERT INTO records (collection_id, key, payload, version)
                VALUES (?1, ?2, ?3, (SELECT value FROM store_meta WHERE name = 'last_version') + 1)
                ON CONFLICT (collection_id, key) DO UPDATE
                SET payload = excluded.payload, version = records.version + 1
                WHERE records.payload IS NOT excluded.payload
                RETURNING version
                """
            ) { statement in
                try bindUpsert(statement, id, key, data)
                return try returnedVersion(statement)
            }
        }
    }

    /// Inserts a record expected to be absent. Returns false, writing nothing, when the key
    /// exists.
    func insertIfAbsent(_ id: Int64, collection: String, key: String, data: Data, version: Int64) throws -> Bool {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                """
                INSERT INTO records (collection_id, key, payload, version) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (collection_id, key) DO NOTHING
                """
            ) { statement in
                try bindUpsert(statement, id, key, data, version)
                try statement.run()
                return connection.changes > 0
            }
        }
    }

    /// Overwrites a record only if it still has version `expected` and a different payload;
    /// returns its new version, or nil when nothing was written (the record is unchanged, has
    /// another version, or does not exist).
    func updateIfVersion(_ id: Int64, collection: String, key: String, data: Data, expected: Int64) throws -> Int64? {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                """
                UPDATE records SET payload = ?3, version = version + 1
                WHERE collection_id = ?1 AND key = ?2 AND version = ?4 AND payload IS NOT ?3
                RETURNING version
                """
            ) { statement in
                try bindUpsert(statement, id, key, data, expected)
                return try returnedVersion(statement)
            }
        }
    }

    /// Binds an upsert's collection id, key and payload (?1–?3) and, when given, its version
    /// (?4; the `AtStoredFloor` statements read the insert version themselves).
    private func bindUpsert(_ statement: Statement, _ id: Int64, _ key: String, _ data: Data, _ version: Int64? = nil) throws {
        try statement.bind(id, at: 1)
        try statement.bind(key, at: 2)
        try statement.bind(data, at: 3)
        if let version { try statement.bind(version, at: 4) }
    }

    /// The version a statement `RETURNING version` gave, or nil when it touched no row,
    /// stepping the statement to its end.
    private func returnedVersion(_ statement: Statement) throws -> Int64? {
        guard try statement.step() else { return nil }
        let version = statement.int64(at: 0)
        while try statement.step() {}
        return version
    }

    /// Removes one record; returns the version it had, or nil when it did not exist.
    func remove(_ id: Int64, collection: String, key: String) throws -> Int64? {
        try run(collection: collection, key: key) {
            try connection.withStatement(
                "DELETE FROM records WHERE collection_id = ?1 AND key = ?2 RETURNING version"
            ) { statement in
                try statement.bind(id, at: 1)
                try statement.bind(key, at: 2)
                return try returnedVersion(statement)
            }
        }
    }

    /// The highest version in a collection, or nil when it holds no records.
    func highestVersion(_ id: Int64, collection: String) throws -> Int64? {
        try run(collection: collection) {
            try connection.withStatement("SELECT max(version) FROM records WHERE collection_id = ?1") { statement in
                try statement.bind(id, at: 1)
                guard try statement.step(), !statement.isNull(at: 0) else { return nil }
                return statement.int64(at: 0)
            }
        }
    }

    /// Removes the collection and all its records.
    func removeCollection(_ id: Int64, name: String) throws {
        try dropDeclaredIndexes(id, collection: name)
        try run(collection: name) {
            try connection.withStatement("DELETE FROM records WHERE collection_id = ?1") { statement in
                try statement.bind(id, at: 1)
                try statement.run()
            }
            try connection.withStatement("DELETE FROM collections WHERE id = ?1") { statement in
                try statement.bind(id, at: 1)
                try statement.run()
            }
        }
    }

    /// The version floor: at least every version a removed record ever had.
    func lastVersion() throws -> Int64 {
        try run {
            try connection.withStatement("SELECT value FROM store_meta WHERE name = 'last_version'") {
                statement in
                guard try statement.step() else {
                    throw RecordStoreError(
                        code: .malformedRecord, operation: operation, path: path,
                        detail: "the store has no version floor (store_meta.last_version)")
                }
                return statement.int64(at: 0)
            }
        }
    }

    func setLastVersion(_ version: Int64) throws {
        try run {
            try connection.withStatement("UPDATE store_meta SET value = ?1 WHERE name = 'last_version'") {
                statement in
                try statement.bind(version, at: 1)
                try statement.run()
            }
        }
    }

    // MARK: Transactions

    /// Begins a write transaction (`StoreCore.performWrite` ends it).
    func beginWrite() throws {
        try run { try connection.beginImmediate() }
    }

    /// Runs `body` in one read transaction, so that everything it reads comes from one
    /// snapshot of the store, even while other connections write: commits when it returns,
    /// rolls back when it throws. Every read transaction is this one.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try run { try connection.beginDeferred() }
        do {
            let result = try body()
            try commit()
            return result
        } catch {
            try rollback(after: error)
            throw error
        }
    }

    func commit() throws {
        try run { try connection.commit() }
    }

    /// Rolls back after `original` failed a transaction. When the rollback fails too, the
    /// error says both.
    func rollback(after original: any Error) throws {
        do {
            try connection.rollback()
        } catch {
            var error = RecordStoreError(error, operation: operation, path: path)
            error.detail = "rolling back after \(original) failed too"
            throw error
        }
    }
}
