import CSQLite
import Foundation
import RecordKeeper

/// An error of the raw baseline: the SQLite result code and message.
struct RawSQLiteError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { "SQLite error \(code): \(message)" }
}

/// The physical limit of the comparison: the SQLite C API doing the same work as the store
/// with the least code. One WITHOUT ROWID table keyed by (collection_id, key), statements
/// prepared once and reused, keys and payloads bound without copies (SQLITE_STATIC while the
/// Swift buffers are pinned), WAL, the same `synchronous` level as the store under test,
/// a busy timeout, and results returned as the same Swift values as `RecordStore`.
///
/// Not Sendable: one connection used from one task at a time, synchronously.
final class RawSQLiteStore {
    private var db: OpaquePointer?
    private let upsertStatement: OpaquePointer
    private let selectAllStatement: OpaquePointer
    private let selectOneStatement: OpaquePointer
    private let beginStatement: OpaquePointer
    private let commitStatement: OpaquePointer
    private let rollbackStatement: OpaquePointer
    /// O1: inserts into the outbox table of format 2, and into the same table without its
    /// unique index on `id` (the floor of one appended row, no duplicate check).
    private let enqueueStatement: OpaquePointer
    private let enqueueUnindexedStatement: OpaquePointer
    /// The one collection of the bench; the column exists so the key shape matches a
    /// multi-collection store.
    private let collectionID: Int64 = 1
    /// Q1/Q2: statements over a field index, prepared on first use, by SQL text.
    private var queryStatements: [String: OpaquePointer] = [:]

    init(path: String, durability: Durability) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw RawSQLiteError(code: rc, message: message)
        }
        db = handle
        sqlite3_busy_timeout(handle, 5_000)
        do {
            try Self.exec(handle, "PRAGMA journal_mode=WAL")
            try Self.exec(handle, durability == .full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
            try Self.exec(handle, """
                CREATE TABLE IF NOT EXISTS records(
                    collection_id INTEGER NOT NULL,
                    key TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    PRIMARY KEY(collection_id, key)
                ) WITHOUT ROWID
                """)
            // O1's outbox: the table of format 2 (docs/FORMAT.md), and a twin without the
            // unique index. Empty unless O1 runs.
            try Self.exec(handle, """
                CREATE TABLE IF NOT EXISTS outbox(
                    sequence INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE,
                    kind TEXT NOT NULL, payload BLOB NOT NULL, ordering_key TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
                    next_attempt_at INTEGER NOT NULL, last_error TEXT, dead INTEGER NOT NULL DEFAULT 0,
                    claimed_by TEXT, claimed_until INTEGER);
                CREATE TABLE IF NOT EXISTS outbox_unindexed(
                    sequence INTEGER PRIMARY KEY, id BLOB NOT NULL,
                    kind TEXT NOT NULL, payload BLOB NOT NULL, ordering_key TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
                    next_attempt_at INTEGER NOT NULL, last_error TEXT, dead INTEGER NOT NULL DEFAULT 0,
                    claimed_by TEXT, claimed_until INTEGER);
                """)
            enqueueStatement = try Self.prepare(handle, """
                INSERT INTO outbox(id, kind, payload, ordering_key, created_at, next_attempt_at)
                VALUES(?1, ?2, ?3, ?4, ?5, ?5)
                """)
            enqueueUnindexedStatement = try Self.prepare(handle, """
                INSERT INTO outbox_unindexed(id, kind, payload, ordering_key, created_at, next_attempt_at)
                VALUES(?1, ?2, ?3, ?4, ?5, ?5)
                """)
            upsertStatement = try Self.prepare(handle, """
                INSERT INTO records(collection_id, key, payload) VALUES(?1, ?2, ?3)
                ON CONFLICT(collection_id, key) DO UPDATE SET payload = excluded.payload
                """)
            selectAllStatement = try Self.prepare(handle, "SELECT key, payload FROM records WHERE collection_id = ?1")
            selectOneStatement = try Self.prepare(handle, "SELECT payload FROM records WHERE collection_id = ?1 AND key = ?2")
            beginStatement = try Self.prepare(handle, "BEGIN IMMEDIATE")
            commitStatement = try Self.prepare(handle, "COMMIT")
            rollbackStatement = try Self.prepare(handle, "ROLLBACK")
        } catch {
            sqlite3_close_v2(handle)
            throw error
        }
    }

    deinit {
        for statement in [upsertStatement, selectAllStatement, selectOneStatement,
                          beginStatement, commitStatement, rollbackStatement,
                          enqueueStatement, enqueueUnindexedStatement] {
            sqlite3_finalize(statement)
        }
        for statement in queryStatements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    // MARK: Operations

    /// W1: every record in one transaction, in key order (UTF-8 bytes) so the B-tree fills
    /// sequentially instead of splitting pages at random; the sort is part of the measured work.
    func insertAll(_ values: [String: Data]) throws {
        let sorted = values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        try transaction {
            for (key, data) in sorted { try upsertRow(key: key, data: data) }
        }
    }

    /// S4's device floor: one pulled page, its own commit.
    func upsertPage(_ rows: [RawPostgres.Row]) throws {
        try transaction {
            for row in rows { try upsertRow(key: row.key, data: row.payload) }
        }
    }

    /// W2: one record, its own commit.
    func put(key: String, data: Data) throws {
        try transaction { try upsertRow(key: key, data: data) }
    }

    /// O1: one record and one outbox row in one commit; `unique: false` writes the row to the
    /// table without the unique index on `id`.
    func put(key: String, data: Data, enqueue message: OutboxMessage, unique: Bool) throws {
        try transaction {
            try upsertRow(key: key, data: data)
            let statement = unique ? enqueueStatement : enqueueUnindexedStatement
            defer {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            }
            withUnsafeBytes(of: message.id.uuid) { id in
                _ = sqlite3_bind_blob(statement, 1, id.baseAddress, 16, recordkeeper_sqlite_transient())
            }
            sqlite3_bind_text(statement, 2, message.kind, -1, recordkeeper_sqlite_transient())
            message.payload.withUnsafeBytes { bytes in
                _ = sqlite3_bind_blob(statement, 3, bytes.baseAddress, Int32(bytes.count), recordkeeper_sqlite_transient())
            }
            if let key = message.orderingKey {
                sqlite3_bind_text(statement, 4, key, -1, recordkeeper_sqlite_transient())
            }
            sqlite3_bind_int64(statement, 5, Int64(Date().timeIntervalSince1970 * 1000))
            let rc = sqlite3_step(statement)
            guard rc == SQLITE_DONE else { throw error(rc) }
        }
    }

    /// W3: the whole collection.
    func readAll() throws -> [String: Data] {
        let statement = selectAllStatement
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, collectionID)
        var result: [String: Data] = [:]
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            result[Self.text(statement, 0)] = Self.blob(statement, 1)
        }
        return result
    }

    /// Streams every row to `body` without building the dictionary (the W6 export).
    func forEachRecord(_ body: (String, UnsafeRawBufferPointer) throws -> Void) throws {
        let statement = selectAllStatement
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, collectionID)
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            let count = Int(sqlite3_column_bytes(statement, 1))
            let bytes = UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, 1), count: count)
            try body(Self.text(statement, 0), bytes)
        }
    }

    /// W4: one record by key.
    func value(key: String) throws -> Data? {
        let statement = selectOneStatement
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, collectionID)
        var key = key
        let rc: Int32 = key.withUTF8 { utf8 in
            sqlite3_bind_text(statement, 2, utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                              Int32(utf8.count), recordkeeper_sqlite_static())
            return sqlite3_step(statement)
        }
        switch rc {
        case SQLITE_ROW: return Self.blob(statement, 0)
        case SQLITE_DONE: return nil
        default: throw error(rc)
        }
    }

    /// `PRAGMA synchronous` in force (2 = FULL, 1 = NORMAL), to check the setting took.
    func synchronousLevel() throws -> Int {
        let statement = try Self.prepare(db!, "PRAGMA synchronous")
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw error(sqlite3_errcode(db)) }
        return Int(sqlite3_column_int64(statement, 0))
    }

    /// Records in the collection (used to verify fixtures).
    func count() throws -> Int {
        let statement = try Self.prepare(db!, "SELECT count(*) FROM records WHERE collection_id = ?1")
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_int64(statement, 1, collectionID)
        guard sqlite3_step(statement) == SQLITE_ROW else { throw error(sqlite3_errcode(db)) }
        return Int(sqlite3_column_int64(statement, 0))
    }

    // MARK: Q1/Q2: a field of the JSON payloads, indexed

    /// The expression over the number `field` of the payloads: the one RecordKeeper's queries
    /// and declared indexes write (`json_extract(CAST(payload AS TEXT), '$.field')`).
    private static func fieldExpression(_ field: StaticString) -> String {
        "json_extract(CAST(payload AS TEXT), '$.\(field)')"
    }

    /// Creates the index a declared field gets in RecordKeeper (format 7): over the
    /// collection id and the field's JSON value, partial to the collection.
    func createFieldIndex(_ field: StaticString) throws {
        try Self.exec(db!, "CREATE INDEX IF NOT EXISTS \"raw_\(field)\" ON records (collection_id, \(Self.fieldExpression(field))) "
            + "WHERE collection_id = \(collectionID)")
    }

    /// Q1: the payloads of the `limit` records with the greatest `field`, ties by key descending,
    /// through the field's index: the statement shape RecordKeeper's query runs (the key,
    /// the payload and the sort value selected).
    func newest(by field: StaticString, limit: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let expression = Self.fieldExpression(field)
        let statement = try queryStatement("SELECT key, payload, \(expression) FROM records INDEXED BY \"raw_\(field)\" "
            + "WHERE collection_id = \(collectionID) ORDER BY \(expression) DESC, key DESC LIMIT ?1")
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, Int64(limit))
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            let count = Int(sqlite3_column_bytes(statement, 1))
            try body(UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, 1), count: count))
        }
    }

    /// Q2: how many records have `field` between `lower` and `upper`, through its index.
    func count(where field: StaticString, between lower: Int, and upper: Int) throws -> Int {
        let statement = try queryStatement("SELECT count(*) FROM records INDEXED BY \"raw_\(field)\" "
            + "WHERE collection_id = \(collectionID) AND \(Self.fieldExpression(field)) BETWEEN ?1 AND ?2")
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, Int64(lower))
        sqlite3_bind_int64(statement, 2, Int64(upper))
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_ROW else { throw error(rc) }
        return Int(sqlite3_column_int64(statement, 0))
    }

    private func queryStatement(_ sql: String) throws -> OpaquePointer {
        if let statement = queryStatements[sql] { return statement }
        let statement = try Self.prepare(db!, sql)
        queryStatements[sql] = statement
        return statement
    }

    // MARK: Internals

    private func transaction(_ body: () throws -> Void) throws {
        try step(beginStatement)
        do {
            try body()
            try step(commitStatement)
        } catch {
            _ = try? step(rollbackStatement)
            throw error
        }
    }

    private func upsertRow(key: String, data: Data) throws {
        let statement = upsertStatement
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        sqlite3_bind_int64(statement, 1, collectionID)
        var key = key
        let rc: Int32 = key.withUTF8 { utf8 in
            sqlite3_bind_text(statement, 2, utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                              Int32(utf8.count), recordkeeper_sqlite_static())
            return data.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress {
                    sqlite3_bind_blob(statement, 3, base, Int32(bytes.count), recordkeeper_sqlite_static())
                } else {
                    sqlite3_bind_zeroblob(statement, 3, 0)
                }
                return sqlite3_step(statement)
            }
        }
        guard rc == SQLITE_DONE else { throw error(rc) }
    }

    private func step(_ statement: OpaquePointer) throws {
        defer { sqlite3_reset(statement) }
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw error(rc) }
    }

    private func error(_ rc: Int32) -> RawSQLiteError {
        RawSQLiteError(code: rc, message: String(cString: sqlite3_errmsg(db)))
    }

    private static func text(_ statement: OpaquePointer, _ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    private static func blob(_ statement: OpaquePointer, _ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return Data() }
        return Data(bytes: pointer, count: count)
    }

    private static func exec(_ db: OpaquePointer, _ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? "unknown"
            sqlite3_free(message)
            throw RawSQLiteError(code: rc, message: text)
        }
    }

    private static func prepare(_ db: OpaquePointer, _ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw RawSQLiteError(code: rc, message: String(cString: sqlite3_errmsg(db)))
        }
        return statement
    }
}
