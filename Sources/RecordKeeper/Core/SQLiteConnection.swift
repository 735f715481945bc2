import CSQLite
import Foundation

/// One SQLite connection: the raw handle, its statement cache and its transactions.
///
/// Every `sqlite3_*` call of the library lives in `Core/`: this file, `Statement.swift`,
/// `SQLiteConnection+Pragmas.swift` and `SQLiteFailure.swift`. A connection is used by one
/// thread at a time (whoever holds its store's lock), so it is deliberately not `Sendable`.
final class SQLiteConnection {
    /// The raw handle.
    let handle: OpaquePointer
    /// The file path, or nil for an in-memory database.
    let path: String?
    /// Prepared statements keyed by the address of their SQL literal: hashing an address is
    /// far cheaper than hashing the SQL text on every call, and only `StaticString` SQL (text
    /// written in this library, never built from input) can be cached at all.
    private var statements: [UInt: Statement] = [:]

    /// Opens (never creates) the database file at `path`, or a private in-memory database
    /// when `path` is nil.
    ///
    /// The handle is closed again when anything after `sqlite3_open_v2` fails.
    init(path: String?, busyTimeout: Duration) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        // NOMUTEX: the connection is only ever used from one serial executor at a time.
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        if path == nil { flags |= SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY }
        let code = sqlite3_open_v2(path ?? ":memory:", &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(code: code, handle: handle)
            sqlite3_close_v2(handle)
            throw failure
        }
        self.handle = handle
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        let milliseconds = busyTimeout.components.seconds * 1000
            + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(handle, Int32(clamping: milliseconds))
        installCancellationCheck()
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    // MARK: Statements

    /// The cached prepared statement for `sql`, prepared on first use.
    ///
    /// A statement that fails to prepare is not cached.
    func statement(_ sql: StaticString) throws(SQLiteFailure) -> Statement {
        let key = UInt(bitPattern: sql.utf8Start)
        if let statement = statements[key] { return statement }
        let statement = try Statement(connection: handle, sql: sql.description, persistent: true)
        statements[key] = statement
        return statement
    }

    /// Runs `body` with the cached statement for `sql`, resetting it afterwards whatever happens.
    func withStatement<T>(_ sql: StaticString, _ body: (Statement) throws -> T) throws -> T {
        let statement = try statement(sql)
        defer { statement.reset() }
        return try body(statement)
    }

    /// Executes SQL text that binds nothing (schema steps, transaction control).
    ///
    /// Only ever called with constant SQL written in this library, never with user strings.
    func execute(_ sql: String) throws(SQLiteFailure) {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteFailure(code: sqlite3_extended_errcode(handle), message: text)
        }
    }

    /// The rowid of the most recent successful INSERT on this connection.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// True when no transaction is open.
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    // MARK: Transactions

    /// Begins a write transaction that takes the write lock at once, so a later statement can
    /// never fail to upgrade a read lock (SQLITE_BUSY without waiting).
    func beginImmediate() throws(SQLiteFailure) {
        try runCached("BEGIN IMMEDIATE")
    }

    /// Begins a read transaction: all reads until commit see one snapshot.
    func beginDeferred() throws(SQLiteFailure) {
        try runCached("BEGIN DEFERRED")
    }

    func commit() throws(SQLiteFailure) {
        try runCached("COMMIT")
    }

    /// Rolls back the open transaction, if SQLite has not already done so.
    ///
    /// Cancellation checks are suspended meanwhile, so a cancelled request can always undo
    /// its work.
    func rollback() throws(SQLiteFailure) {
        guard !isAutocommit else { return }
        sqlite3_progress_handler(handle, 0, nil, nil)
        defer { installCancellationCheck() }
        try runCached("ROLLBACK")
    }

    private func runCached(_ sql: StaticString) throws(SQLiteFailure) {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.run()
    }

    // MARK: Cancellation

    /// Makes long statements stop with SQLITE_INTERRUPT when the Swift task running them is
    /// cancelled. SQLite calls the handler every 1,000 virtual machine steps on the thread
    /// that runs the statement, which is the thread of the task that asked for it, so one
    /// task's cancellation never interrupts another task's statement.
    private func installCancellationCheck() {
        sqlite3_progress_handler(handle, 1_000, { _ in Task.isCancelled ? 1 : 0 }, nil)
    }
}
