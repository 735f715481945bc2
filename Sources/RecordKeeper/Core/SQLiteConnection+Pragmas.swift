import CSQLite

extension SQLiteConnection {
    /// `PRAGMA application_id`, `PRAGMA user_version` and the number of schema objects, read in
    /// one read transaction (unless one is open already): all three come from one state of
    /// the file even while another connection is creating the same store.
    ///
    /// Three plain statements, not one `SELECT` over `pragma_application_id()` and
    /// `pragma_user_version()`: preparing those table-valued functions took 65–83 µs, three
    /// times the rest together, and every opening reads the header (a cold open to a first
    /// read, W5, takes about 1 ms).
    func header() throws(SQLiteFailure) -> (applicationID: Int32, userVersion: Int, schemaObjects: Int) {
        func fields() throws(SQLiteFailure) -> (applicationID: Int32, userVersion: Int, schemaObjects: Int) {
            (Int32(truncatingIfNeeded: try integerPragma("PRAGMA application_id")),
             Int(try integerPragma("PRAGMA user_version")),
             Int(try integerPragma("SELECT count(*) FROM sqlite_master")))
        }
        guard isAutocommit else { return try fields() }
        try beginDeferred()
        do {
            let read = try fields()
            try commit()
            return read
        } catch {
            // Never left open: a connection whose reads all ran in one stale snapshot would
            // hide every later commit.
            do {
                try rollback()
            } catch let second {
                throw SQLiteFailure(
                    code: error.code.rawValue,
                    message: "\(error.message); ending the read transaction after it failed too: \(second.message)",
                    systemErrno: error.systemErrno)
            }
            throw error
        }
    }

    /// `PRAGMA user_version`: the store's format version.
    func userVersion() throws(SQLiteFailure) -> Int {
        Int(try integerPragma("PRAGMA user_version"))
    }

    /// Writes the format version and application id inside the current transaction.
    ///
    /// PRAGMA statements cannot take bound parameters; both values are integers chosen by this
    /// library (the migration plan), never input.
    func setFormat(version: Int, applicationID: Int32) throws(SQLiteFailure) {
        try execute("PRAGMA user_version = \(version); PRAGMA application_id = \(applicationID)")
    }

    /// Switches a file database to write-ahead logging; returns the journal mode in force.
    func enableWriteAheadLog() throws(SQLiteFailure) -> String {
        try textPragma("PRAGMA journal_mode = WAL")
    }

    /// `PRAGMA query_only = 1`: any statement that would change the database fails.
    func setQueryOnly() throws(SQLiteFailure) {
        try execute("PRAGMA query_only = 1")
    }

    /// Keeps SQLite from removing the `-wal` and `-shm` files by their path when this
    /// connection, the last one of the file, closes (`SQLITE_FCNTL_PERSIST_WAL`): for a
    /// connection whose files were removed while it was open, when other files may stand at
    /// those paths by then.
    func keepLogFilesOnClose() throws(SQLiteFailure) {
        var persist: Int32 = 1
        let code = sqlite3_file_control(handle, nil, SQLITE_FCNTL_PERSIST_WAL, &persist)
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: handle) }
    }

    /// Leaves the file as this connection found it when it closes, even as its last connection:
    /// no checkpoint (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`), and the `-wal` and `-shm` kept
    /// (``keepLogFilesOnClose()``). For a connection to a file this version refuses.
    func leaveFileAsFoundOnClose() throws(SQLiteFailure) {
        let code = recordkeeper_sqlite_no_checkpoint_on_close(handle)
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: handle) }
        try keepLogFilesOnClose()
    }

    func journalMode() throws(SQLiteFailure) -> String {
        try textPragma("PRAGMA journal_mode")
    }

    /// How commits and checkpoints reach the disk (see `Durability` and docs/RELIABILITY.md).
    ///
    /// `PRAGMA synchronous`: FULL (2) syncs the WAL at every commit, NORMAL (1) at checkpoints.
    /// On Apple platforms a sync is `fsync`, which leaves the data in the drive's volatile cache,
    /// so: `full` also sets `PRAGMA fullfsync = 1` (every sync is `fcntl(F_FULLFSYNC)`, which
    /// flushes that cache) and `checkpoint_fullfsync = 1`; `normal` sets `checkpoint_fullfsync = 1`
    /// only, so a checkpoint's copy into the main file is on the disk before the log is reused
    /// (a power loss may lose the last commits, never corrupt the file). Elsewhere SQLite
    /// ignores both pragmas, so they are not sent.
    func setDurability(full: Bool) throws(SQLiteFailure) {
        try execute(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        #if canImport(Darwin)
            try execute(full ? "PRAGMA fullfsync = 1; PRAGMA checkpoint_fullfsync = 1" : "PRAGMA checkpoint_fullfsync = 1")
        #endif
    }

    /// `PRAGMA fullfsync` and `PRAGMA checkpoint_fullfsync` as the connection has them.
    func fullFsyncFlags() throws(SQLiteFailure) -> (fullfsync: Bool, checkpointFullfsync: Bool) {
        (try integerPragma("PRAGMA fullfsync") != 0, try integerPragma("PRAGMA checkpoint_fullfsync") != 0)
    }

    /// True when `PRAGMA synchronous` is FULL (2) or EXTRA (3).
    func synchronousIsFull() throws(SQLiteFailure) -> Bool {
        try integerPragma("PRAGMA synchronous") >= 2
    }

    func pageSize() throws(SQLiteFailure) -> Int { Int(try integerPragma("PRAGMA page_size")) }
    func pageCount() throws(SQLiteFailure) -> Int { Int(try integerPragma("PRAGMA page_count")) }
    func freePageCount() throws(SQLiteFailure) -> Int { Int(try integerPragma("PRAGMA freelist_count")) }

    /// `PRAGMA integrity_check`: ["ok"] for a healthy database, else one line per problem.
    func integrityCheck() throws(SQLiteFailure) -> [String] {
        let statement = try Statement(connection: handle, sql: "PRAGMA integrity_check", persistent: false)
        var lines: [String] = []
        while try statement.step() { lines.append(statement.string(at: 0)) }
        return lines
    }

    /// The SQLite library version in use.
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// Limits the database to `pages` pages (for tests that simulate a full disk).
    func setMaxPageCount(_ pages: Int) throws(SQLiteFailure) {
        try execute("PRAGMA max_page_count = \(pages)")
    }

    private func integerPragma(_ sql: String) throws(SQLiteFailure) -> Int64 {
        let statement = try Statement(connection: handle, sql: sql, persistent: false)
        guard try statement.step() else { return 0 }
        return statement.int64(at: 0)
    }

    private func textPragma(_ sql: String) throws(SQLiteFailure) -> String {
        let statement = try Statement(connection: handle, sql: sql, persistent: false)
        guard try statement.step() else { return "" }
        return statement.string(at: 0)
    }
}
