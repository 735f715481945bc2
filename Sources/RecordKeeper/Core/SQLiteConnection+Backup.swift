import CSQLite

extension SQLiteConnection {
    /// Copies the main database into the empty file at `path` with SQLite's online backup API,
    /// in one step.
    ///
    /// One step is one read transaction on this connection: other connections keep writing
    /// meanwhile, and the copy holds every transaction committed before it began, including
    /// those still only in the write-ahead log, as one complete database file (no `-wal`
    /// needed). Works for in-memory databases too, which `VACUUM INTO` does not: from a
    /// connection opened with `SQLITE_OPEN_MEMORY` it writes its copy into memory as well.
    /// `path` must exist (the caller creates it with the permissions it wants) and be empty.
    /// `protectionFlag` as in `init(path:busyTimeout:mode:protectionFlag:)`, for the files the
    /// copy's connection creates.
    func backup(into path: String, protectionFlag: Int32 = 0) throws(SQLiteFailure) {
        let destination = try SQLiteConnection(path: path, busyTimeout: .zero, protectionFlag: protectionFlag)
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw SQLiteFailure(code: sqlite3_errcode(destination.handle), handle: destination.handle)
        }
        let stepped = sqlite3_backup_step(backup, -1)
        // The error of a failed step is reported again by finish, and its message is kept on
        // the destination's handle.
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE else { throw SQLiteFailure(code: stepped, handle: destination.handle) }
        guard finished == SQLITE_OK else { throw SQLiteFailure(code: finished, handle: destination.handle) }
    }
}
