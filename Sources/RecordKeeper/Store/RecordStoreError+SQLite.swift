import Foundation

extension RecordStoreError {
    /// Maps a SQLite failure to the store's error, adding the request's context. SQLite's
    /// extended code and message are kept as they are.
    ///
    /// A failure whose system error is `EPERM` on a data-protected file (Apple platforms, the
    /// device locked) is ``Code/protectedDataUnavailable``, whatever SQLite's code says: SQLite
    /// reports it as "unable to open" or as an I/O error, and the store would otherwise tell
    /// the person to fix permissions that are fine.
    init(
        _ failure: SQLiteFailure, operation: StoreOperation, collection: String? = nil, key: String? = nil,
        path: String? = nil
    ) {
        let code: Code
        if let path, ProtectedData.isUnavailable(errno: failure.systemErrno, path: path) {
            code = .protectedDataUnavailable
        } else if Self.isOpenFilesLimit(failure) {
            // SQLite says "unable to open database file" or "disk I/O error": a file could not
            // be opened, and neither it nor the disk is at fault.
            code = .cannotOpen
        } else {
            code =
                switch failure.code {
                case .notADatabase: .notADatabase
                case .corrupt: .corruptStore
                case .cannotOpen: .cannotOpen
                case .readOnly: .readOnly
                case .full: .storageFull
                case .busy, .locked: .busy
                case .ioError: .ioError
                case .tooBig: .tooBig
                default: .sqlite
                }
        }
        self.init(
            code: code, operation: operation, collection: collection, key: key, path: path,
            sqliteCode: failure.code.rawValue, sqliteMessage: failure.message)
        if Self.isOpenFilesLimit(failure) {
            self.detail = Self.openFilesLimitDetail(failure.systemErrno)
        } else if code == .readOnly, let path, let detail = Self.unwritableCompanionDetail(of: path) {
            // SQLite opens a -shm it may not write read-only, so reads work and the first
            // write fails: say which file is in the way, not "the store".
            self.detail = detail
        }
    }

    /// `EMFILE` or `ENFILE`: the process (or the system) has as many files open as it may.
    static func isOpenFilesLimit(_ number: Int32) -> Bool {
        number == EMFILE || number == ENFILE
    }

    /// A failure to open a file for the open files limit. Only an open failure or an I/O error
    /// says so: SQLite refreshes its system error only for those, so another code may come
    /// with an older one.
    static func isOpenFilesLimit(_ failure: SQLiteFailure) -> Bool {
        (failure.code.matches(.cannotOpen) || failure.code.matches(.ioError)) && isOpenFilesLimit(failure.systemErrno)
    }

    /// The detail of a failure to open a file for the open files limit (`EMFILE`, or
    /// `ENFILE` for the system's).
    static func openFilesLimitDetail(_ number: Int32) -> String {
        (number == ENFILE ? "too many files are open on this system" : "too many files are open in this process")
            + " (\(String(cString: strerror(number))))"
    }

    /// The failure to open the store at `path` for the open files limit (`number`: `EMFILE`
    /// or `ENFILE`), found before SQLite opened it.
    static func openFilesLimit(path: String, _ number: Int32) -> RecordStoreError {
        RecordStoreError(code: .cannotOpen, operation: .open, path: path, detail: openFilesLimitDetail(number))
    }

    /// Whether `detail` is one of `openFilesLimitDetail`'s.
    static func isOpenFilesLimitDetail(_ detail: String?) -> Bool {
        detail?.hasPrefix("too many files are open ") == true
    }

    /// What to say when the store's `-wal` or `-shm` file exists and this process may not
    /// write it (nil otherwise): that file, the system's reason, and what to do. A read of a
    /// store whose file was read-only leaves a `-shm` of that mode.
    static func unwritableCompanionDetail(of path: String) -> String? {
        for suffix in ["-shm", "-wal"] {
            let companion = path + suffix
            guard FileManager.default.fileExists(atPath: companion), access(companion, W_OK) != 0 else { continue }
            return "the store is read-only here: \(companion) is not writable (\(String(cString: strerror(errno)))), "
                + "and writing needs it; make it writable, or remove it while no process has the store open"
        }
        return nil
    }
}
