import Foundation

/// Runs the table gateways' SQL on the connection of one request, and turns every SQLite
/// failure into the error the store throws.
///
/// It carries what an error must say besides SQLite's code and message: the request's
/// operation and the store's path; each call adds the collection and key it concerns. The
/// gateways (`RecordsTable`, `ChangeLogTable`, `ItemVersionsTable`, `OutboxTable`,
/// `SyncQueueTable`, `SyncRecordsTable`, `SyncStateTable`, `ConflictsTable`, `IndexesTable`)
/// each hold one and write only SQL and row decoding: a cached statement (keyed by its
/// `StaticString`, see `SQLiteConnection.statement(_:)`) is bound with the values given, in
/// order as `?1`, `?2`, …, stepped as the helper says, and reset.
struct StatementRunner {
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
        } else if failure.code == .constraintNotNull, failure.message == RecordsTable.maximumVersionMessage {
            // Only a damaged or hand-edited file holds a version (or a version floor) at
            // `Int64.max`: the write has no next version to give (see `RecordsTable.upsert`).
            error.code = .malformedRecord
            error.detail =
                "the record's version, or the store's version floor, is the largest there is (\(Int64.max)), "
                + "so no write can give a next one; only a damaged or edited file holds it"
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

    /// An error for a row that is not what the format says (`malformedRecord`), with the context.
    func malformed(collection: String? = nil, key: String? = nil, _ detail: String) -> RecordStoreError {
        RecordStoreError(
            code: .malformedRecord, operation: operation, collection: collection, key: key, path: path, detail: detail)
    }

    /// The record key in `column` of `statement`, a row of `collection`. A key that is not
    /// valid UTF-8 (a damaged file, or another program's write) is `malformedRecord`: read as
    /// text it would silently be another key.
    func key(_ statement: Statement, at column: Int32, collection: String) throws -> String {
        if let key = statement.validString(at: column) { return key }
        let shown = statement.string(at: column)
        throw malformed(
            collection: collection, key: shown,
            "a key stored in it is not valid UTF-8 (shown with U+FFFD for the invalid bytes): the store file is "
                + "damaged or another program wrote it; it is not read as another key. Other collections read as "
                + "before; the integrity check lists every such key")
    }

    // MARK: Statements

    /// Runs `body` with the cached statement for `sql`, `values` bound as `?1`, `?2`, …
    ///
    /// It and the helpers over it are inlined into each gateway method: a call of a function
    /// generic over a parameter pack passes the pack in memory, copying each value through
    /// generic value witnesses (a bulk write of 100,000 records took a third longer than with
    /// binding written out).
    @inline(__always)
    func withStatement<each Value: StatementArgument, T>(
        _ sql: StaticString, _ values: repeat each Value, collection: String? = nil, key: String? = nil,
        _ body: (Statement) throws -> T
    ) throws -> T {
        try run(collection: collection, key: key) {
            try connection.withStatement(sql) { statement in
                // A pack expansion, not `for value in repeat each values`: iterating a pack
                // copies each value and, on Linux with Swift 6.3, looked its metadata up at run
                // time on every statement (W1, a bulk write, took a fifth longer).
                var index: Int32 = 0
                repeat try Self.bind(each values, to: statement, after: &index)
                return try body(statement)
            }
        }
    }

    /// Binds `value` as the parameter after `index`, and advances `index`.
    @inline(__always)
    private static func bind<Value: StatementArgument>(
        _ value: Value, to statement: Statement, after index: inout Int32
    ) throws {
        index += 1
        try value.bind(to: statement, at: index)
    }

    /// Runs a statement that returns no rows; true when it inserted, updated or deleted a row
    /// (SQLite's change count, meaningful for those statements).
    @discardableResult
    @inline(__always)
    func execute<each Value: StatementArgument>(
        _ sql: StaticString, _ values: repeat each Value, collection: String? = nil, key: String? = nil
    ) throws -> Bool {
        try withStatement(sql, repeat each values, collection: collection, key: key) { statement in
            try statement.run()
            return connection.changes > 0
        }
    }

    /// The first row, as `row` reads it; nil when there is none (or `row` answers nil). The
    /// statement is not stepped further.
    @inline(__always)
    func one<each Value: StatementArgument, T>(
        _ sql: StaticString, _ values: repeat each Value, collection: String? = nil, key: String? = nil,
        _ row: (Statement) throws -> T?
    ) throws -> T? {
        try withStatement(sql, repeat each values, collection: collection, key: key) { statement in
            try statement.step() ? row(statement) : nil
        }
    }

    /// The first row a statement with `RETURNING` gives, as `row` reads it (nil when it touched
    /// no row), stepping the statement to its end.
    @inline(__always)
    func returning<each Value: StatementArgument, T>(
        _ sql: StaticString, _ values: repeat each Value, collection: String? = nil, key: String? = nil,
        _ row: (Statement) throws -> T
    ) throws -> T? {
        try withStatement(sql, repeat each values, collection: collection, key: key) { statement in
            guard try statement.step() else { return nil }
            let value = try row(statement)
            while try statement.step() {}
            return value
        }
    }

    /// Whether the statement gives a row.
    @inline(__always)
    func exists<each Value: StatementArgument>(
        _ sql: StaticString, _ values: repeat each Value, collection: String? = nil, key: String? = nil
    ) throws -> Bool {
        try withStatement(sql, repeat each values, collection: collection, key: key) { try $0.step() }
    }

    /// Calls `row` with each row, in order.
    @inline(__always)
    func each<each Value: StatementArgument>(
        _ sql: StaticString, _ values: repeat each Value, collection: String? = nil, key: String? = nil,
        _ row: (Statement) throws -> Void
    ) throws {
        try withStatement(sql, repeat each values, collection: collection, key: key) { statement in
            while try statement.step() { try row(statement) }
        }
    }

    /// Every row, as `row` reads it, in order.
    @inline(__always)
    func all<each Value: StatementArgument, T>(
        _ sql: StaticString, _ values: repeat each Value, collection: String? = nil, key: String? = nil,
        _ row: (Statement) throws -> T
    ) throws -> [T] {
        var rows: [T] = []
        try each(sql, repeat each values, collection: collection, key: key) { rows.append(try row($0)) }
        return rows
    }
}

/// A value a statement binds as a parameter: integers, text, blobs, UUIDs (16 bytes) and,
/// for nil, SQL NULL.
protocol StatementArgument {
    func bind(to statement: Statement, at index: Int32) throws(SQLiteFailure)
}

extension Int64: StatementArgument {
    func bind(to statement: Statement, at index: Int32) throws(SQLiteFailure) { try statement.bind(self, at: index) }
}

/// Bound as a 64-bit integer.
extension Int: StatementArgument {
    func bind(to statement: Statement, at index: Int32) throws(SQLiteFailure) { try statement.bind(Int64(self), at: index) }
}

extension String: StatementArgument {
    func bind(to statement: Statement, at index: Int32) throws(SQLiteFailure) { try statement.bind(self, at: index) }
}

extension Data: StatementArgument {
    func bind(to statement: Statement, at index: Int32) throws(SQLiteFailure) { try statement.bind(self, at: index) }
}

extension UUID: StatementArgument {
    func bind(to statement: Statement, at index: Int32) throws(SQLiteFailure) { try statement.bind(self, at: index) }
}

/// Nil is bound as SQL NULL.
extension Optional: StatementArgument where Wrapped: StatementArgument {
    func bind(to statement: Statement, at index: Int32) throws(SQLiteFailure) {
        if let self { try self.bind(to: statement, at: index) } else { try statement.bindNull(at: index) }
    }
}
