import CSQLite
import Foundation

/// One SQLite connection: the raw handle, its statement cache and its transactions.
///
/// Every `sqlite3_*` call of the library lives in `Core/`: this file, `Statement.swift`,
/// `SQLiteConnection+Pragmas.swift`, `SQLiteConnection+Backup.swift`, `SQLiteFailure.swift` and
/// `SQLiteFile.swift`.
/// A connection is used by one thread at a time, with its owner's lock held (see `StoreCore`),
/// so it is deliberately not `Sendable`.
final class SQLiteConnection {
    /// The raw handle.
    let handle: OpaquePointer
    /// The file path, or nil for an in-memory database.
    let path: String?
    /// Prepared statements keyed by the address of their SQL literal: hashing an address is
    /// far cheaper than hashing the SQL text on every call, and only `StaticString` SQL (text
    /// written in this library, never built from input) can be cached at all.
    private let statements = StatementTable()
    /// Prepared statements of generated query SQL (`QuerySQL`), keyed by their text, and the
    /// texts from least to most recently used; at most `queryStatementLimit` (see
    /// `withQueryStatement`).
    ///
    /// The empty dictionaries here and in other types a store builds when it is created are
    /// `Dictionary()`, not `[:]`: the literal builds the dictionary type's metadata at once
    /// (looking up its key's `Hashable` conformance in every loaded image), `init()` only at
    /// the first insertion, which a cold open's first read may never make.
    private var queryStatements: [String: Statement] = Dictionary()
    private var queryStatementUse: [String] = []
    /// How many query statements a connection keeps prepared: an app runs a few query shapes
    /// per screen; the bound keeps memory flat when a caller builds many.
    static let queryStatementLimit = 32
    /// The declared indexes of each collection (by id), as read under schema cookie
    /// `schemaVersion` (see `IndexesTable.declaredIndexes`).
    var declaredIndexCache: (schemaVersion: Int64, fields: [Int64: [FieldPath]]) = (-1, Dictionary()) {
        // The SQL built for the declared indexes of before may name one that is gone.
        didSet { if declaredIndexCache.schemaVersion != oldValue.schemaVersion { querySQLCache = Dictionary() } }
    }
    /// The SQL text (and bound-value layout) built for each query shape, kept as long as
    /// `declaredIndexCache` is (see `RecordQueries.querySQL`); at most `querySQLLimit` shapes.
    var querySQLCache: [QueryShapeKey: QuerySQL] = Dictionary()
    static let querySQLLimit = 64
    /// The collections this connection looked up, kept while the store's data version says
    /// nothing changed (see `CollectionRefCache`; kept up by the transaction methods below).
    let collectionRefs = CollectionRefCache()

    /// How a file is opened.
    enum OpenMode {
        /// Read and write (read only when the file is write-protected); never creates the file.
        case readWrite
        /// `SQLITE_OPEN_READONLY`.
        case readOnly
        /// Read only, as a file nobody changes (`immutable=1`): no locks, no `-wal` or `-shm`
        /// file, the main file alone. Only for a glance at a database no connection has open.
        case immutable
    }

    /// How the file was opened.
    let mode: OpenMode
    /// The busy timeout in milliseconds, restored after `refusingToWait`.
    private let busyMilliseconds: Int32
    /// Frames in the write-ahead log after the last commit through this connection, when
    /// `monitorWriteAheadLog()` was called (0 otherwise).
    private(set) var walFrames = 0

    /// Opens (never creates) the database file at `path`, or a private in-memory database
    /// when `path` is nil. `protectionFlag` is one of Apple's `SQLITE_OPEN_FILEPROTECTION_*`
    /// flags (see `FileProtection.sqliteOpenFlag`; 0: none), the class SQLite gives the files
    /// it creates for the database (`-wal`, `-shm`).
    ///
    /// The handle is closed again when anything after `sqlite3_open_v2` fails.
    init(path: String?, busyTimeout: Duration, mode: OpenMode = .readWrite, protectionFlag: Int32 = 0) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        // NOMUTEX: the connection is only ever used from one thread at a time.
        var flags = SQLITE_OPEN_NOMUTEX | protectionFlag
        var name = path ?? ":memory:"
        switch mode {
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        case .immutable:
            flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
            name = "file:" + Self.uriEscaped(name) + "?immutable=1"
        }
        if path == nil { flags |= SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY }
        let code = sqlite3_open_v2(name, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(code: code, handle: handle)
            sqlite3_close_v2(handle)
            throw failure
        }
        self.handle = handle
        self.path = path
        self.mode = mode
        sqlite3_extended_result_codes(handle, 1)
        let milliseconds = busyTimeout.components.seconds * 1000
            + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        busyMilliseconds = Int32(clamping: milliseconds)
        sqlite3_busy_timeout(handle, busyMilliseconds)
        installCancellationCheck()
    }

    /// `path` as the path part of an SQLite URI: `%`, `?` and `#` (and anything not printable
    /// ASCII) percent-encoded.
    private static func uriEscaped(_ path: String) -> String {
        var result = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                result += String(format: "%%%02X", byte)
            default:
                result.unicodeScalars.append(UnicodeScalar(byte))
            }
        }
        return result
    }

    deinit {
        sqlite3_wal_hook(handle, nil, nil)
        statements.removeAll()
        queryStatements.removeAll()
        sqlite3_close_v2(handle)
    }

    // MARK: Statements

    /// The cached prepared statement for `sql`, prepared on first use.
    ///
    /// A statement that fails to prepare is not cached.
    func statement(_ sql: StaticString) throws(SQLiteFailure) -> Statement {
        try checkTransactionStillOpen()
        let key = UInt(bitPattern: sql.utf8Start)
        if let statement = statements[key] { return statement }
        let statement = try Statement(connection: handle, sql: sql.description, persistent: true)
        statements.insert(statement, for: key)
        return statement
    }

    /// Runs `body` with the cached statement for `sql`, resetting it afterwards whatever happens.
    func withStatement<T>(_ sql: StaticString, _ body: (Statement) throws -> T) throws -> T {
        let statement = try statement(sql)
        defer { statement.reset() }
        return try body(statement)
    }

    /// Runs `body` with a prepared statement for `text`, the SQL of a query the library generated
    /// (`QuerySQL`: its own text, validated field paths and a collection id; every caller's
    /// value is a bound parameter), resetting it afterwards whatever happens.
    ///
    /// Statements are kept by their text (the same query shape with other values is the same
    /// text), the `queryStatementLimit` most recently used ones. A statement that fails to
    /// prepare is not kept, and one whose use throws is dropped, so a failure is never
    /// replayed from the cache. A kept statement stays right when the schema changes (another
    /// connection drops an index): SQLite prepares it again before its next step, and fails it
    /// if its text no longer fits the schema.
    func withQueryStatement<T>(_ text: String, _ body: (Statement) throws -> T) throws -> T {
        try checkTransactionStillOpen()
        let statement: Statement
        if let cached = queryStatements[text] {
            statement = cached
            if queryStatementUse.last != text, let position = queryStatementUse.lastIndex(of: text) {
                queryStatementUse.remove(at: position)
                queryStatementUse.append(text)
            }
        } else {
            statement = try Statement(connection: handle, sql: text, persistent: true)
            if queryStatements.count >= Self.queryStatementLimit {
                queryStatements[queryStatementUse.removeFirst()] = nil
            }
            queryStatements[text] = statement
            queryStatementUse.append(text)
        }
        defer { statement.reset() }
        do {
            return try body(statement)
        } catch {
            queryStatements[text] = nil
            queryStatementUse.removeAll { $0 == text }
            throw error
        }
    }

    /// How many query statements are kept prepared (tests).
    var queryStatementCount: Int { queryStatements.count }

    /// The database's schema cookie (`PRAGMA schema_version`): SQLite changes it in every
    /// transaction that changes the schema (an index created or dropped), whichever connection
    /// or process commits it, so a value read under it stays right while it stays the same.
    func schemaVersion() throws(SQLiteFailure) -> Int64 {
        let statement = try statement("PRAGMA schema_version")
        defer { statement.reset() }
        guard try statement.step() else { throw SQLiteFailure(code: SQLITE_ERROR, message: "PRAGMA schema_version returned no row") }
        return statement.int64(at: 0)
    }

    /// True while a write transaction is open (its changes, and the schema cookie they moved,
    /// may still be rolled back).
    var isInWriteTransaction: Bool { sqlite3_txn_state(handle, nil) == SQLITE_TXN_WRITE }

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

    /// SQLite's data version of the main database (`SQLITE_FCNTL_DATA_VERSION`): it changes
    /// whenever the content changes, by a commit of this connection or of any other (seen when
    /// this connection next begins reading, as SQLite's own page cache sees it). Nil when
    /// SQLite cannot tell.
    var dataVersion: UInt32? {
        var version: UInt32 = 0
        // nil names the main database (SQLite's documented form), sparing a look-up by name
        // on every point read and transaction.
        guard sqlite3_file_control(handle, nil, SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else { return nil }
        return version
    }

    // MARK: Transactions

    /// Begins a write transaction that takes the write lock at once, so a later statement can
    /// never fail to upgrade a read lock (SQLITE_BUSY without waiting).
    func beginImmediate() throws(SQLiteFailure) {
        try runCached("BEGIN IMMEDIATE")
        transactionOpened = true
        collectionRefs.beganWrite(at: dataVersion)
    }

    /// Begins a read transaction: all reads until commit see one snapshot.
    func beginDeferred() throws(SQLiteFailure) {
        try runCached("BEGIN DEFERRED")
        transactionOpened = true
    }

    func commit() throws(SQLiteFailure) {
        try runCached("COMMIT")
        transactionOpened = false
        collectionRefs.committed(at: dataVersion)
    }

    /// True from `beginImmediate`/`beginDeferred` until `commit` or `rollback`: statements
    /// run in that transaction.
    private var transactionOpened = false

    /// Refuses a statement of a transaction that SQLite has ended by itself. On SQLITE_FULL,
    /// SQLITE_IOERR or SQLITE_NOMEM SQLite may roll the whole transaction back; a caller that
    /// catches that error and goes on would otherwise run its next statements in autocommit,
    /// each committed on its own, outside the transaction that was to hold them all (and with
    /// the collections noted in it, which the rollback undid).
    private func checkTransactionStillOpen() throws(SQLiteFailure) {
        guard transactionOpened, isAutocommit else { return }
        collectionRefs.rolledBack()
        throw SQLiteFailure(
            code: ResultCode.abortRollback.rawValue,
            message: "SQLite rolled the transaction back after an earlier failure in it; nothing of it was kept and nothing more is written")
    }

    /// Rolls back the open transaction, if SQLite has not already done so.
    ///
    /// Cancellation checks are suspended meanwhile, so a cancelled request can always undo
    /// its work.
    func rollback() throws(SQLiteFailure) {
        collectionRefs.rolledBack()
        transactionOpened = false
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

    // MARK: Waiting for locks

    /// Runs `body` with the busy handler off: a lock held by another connection fails at once
    /// with SQLITE_BUSY instead of being waited for on this thread.
    func refusingToWait<T>(_ body: () throws -> T) rethrows -> T {
        sqlite3_busy_timeout(handle, 0)
        refusesToWait = true
        defer {
            sqlite3_busy_timeout(handle, busyMilliseconds)
            refusesToWait = false
        }
        return try body()
    }

    /// True while `refusingToWait` runs: the request is an inline attempt on its caller's
    /// thread, which must stay short (see `RecordQueries.queryRecords`).
    private(set) var refusesToWait = false

    // MARK: Write-ahead log

    /// Turns automatic checkpoints off (they would run inside a commit) and keeps `walFrames`
    /// up to date after every commit instead, so the store can checkpoint elsewhere.
    func monitorWriteAheadLog() {
        // `sqlite3_wal_autocheckpoint` is itself a WAL hook: installing ours replaces it.
        sqlite3_wal_autocheckpoint(handle, 0)
        sqlite3_wal_hook(
            handle,
            { context, _, _, frames in
                guard let context else { return SQLITE_OK }
                Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue().walFrames = Int(frames)
                return SQLITE_OK
            },
            Unmanaged.passUnretained(self).toOpaque())
    }

    enum CheckpointMode {
        /// Copies what it can without waiting for any lock.
        case passive
        /// Waits (busy handler) for writers and readers, copies everything and truncates the log.
        case truncate
    }

    /// Checkpoints the write-ahead log. Returns false when SQLite answered SQLITE_BUSY:
    /// another connection held a lock it needed, nothing is lost, a later checkpoint copies
    /// the rest.
    @discardableResult
    func checkpoint(_ mode: CheckpointMode) throws(SQLiteFailure) -> Bool {
        var logFrames: Int32 = 0
        var copied: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(
            handle, nil, mode == .passive ? SQLITE_CHECKPOINT_PASSIVE : SQLITE_CHECKPOINT_TRUNCATE,
            &logFrames, &copied)
        if ResultCode(rawValue: code).matches(.busy) { return false }
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: handle) }
        if mode == .truncate { walFrames = 0 }
        return logFrames == copied
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
