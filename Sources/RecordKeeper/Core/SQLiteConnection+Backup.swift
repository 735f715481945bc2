import CSQLite

extension SQLiteConnection {
    /// Copies the main database into the empty file at `path` with SQLite's online backup API,
    /// `pagesPerStep` pages at a time, and stops between two steps when the running task is
    /// cancelled (`SQLITE_INTERRUPT`, which the store reports as `CancellationError`).
    ///
    /// Call it inside a read transaction (`beginDeferred`): it reads first, which takes the
    /// snapshot every step copies, so other connections keep writing meanwhile without making
    /// the copy start over, and the copy holds every transaction committed before that read,
    /// including those still only in the write-ahead log, as one complete database file (no
    /// `-wal` needed). Works for in-memory databases too, which `VACUUM INTO` does not: from a
    /// connection opened with `SQLITE_OPEN_MEMORY` it writes its copy into memory as well.
    /// `path` must exist (the caller creates it with the permissions it wants) and be empty.
    /// `protectionFlag` as in `init(path:busyTimeout:mode:protectionFlag:)`, for the files the
    /// copy's connection creates. `afterStep` runs after each step that left pages to copy
    /// (a test seam).
    func backup(
        into path: String, protectionFlag: Int32 = 0, pagesPerStep: Int32 = 1_024, afterStep: (() -> Void)? = nil
    ) throws(SQLiteFailure) {
        if !isAutocommit { _ = try schemaVersion() }
        let destination = try SQLiteConnection(path: path, busyTimeout: .zero, protectionFlag: protectionFlag)
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw SQLiteFailure(code: sqlite3_errcode(destination.handle), handle: destination.handle)
        }
        var stepped: Int32
        repeat {
            stepped = sqlite3_backup_step(backup, pagesPerStep)
            if stepped == SQLITE_OK { afterStep?() }
        } while stepped == SQLITE_OK && !Task.isCancelled
        // The error of a failed step is reported again by finish, and its message is kept on
        // the destination's handle.
        let finished = sqlite3_backup_finish(backup)
        if stepped == SQLITE_OK {
            throw SQLiteFailure(code: SQLITE_INTERRUPT, message: "the copy was stopped: its task was cancelled")
        }
        guard stepped == SQLITE_DONE else { throw SQLiteFailure(code: stepped, handle: destination.handle) }
        guard finished == SQLITE_OK else { throw SQLiteFailure(code: finished, handle: destination.handle) }
    }
}
