import CSQLite

/// A failure reported by SQLite, before the store adds which operation, collection and key it
/// belonged to (`RecordStoreError+SQLite.swift` in `Store/` maps it).
struct SQLiteFailure: Error {
    /// The extended result code (match it with ``ResultCode``'s names: a primary code as a
    /// pattern matches its extended codes).
    let code: ResultCode
    /// `sqlite3_errmsg`, read at once after the failing call.
    let message: String
    /// The operating system's error number behind an I/O or open failure
    /// (`sqlite3_system_errno`), 0 when none or unknown.
    let systemErrno: Int32

    /// Whether another connection holds a lock this call needed (`SQLITE_BUSY`, or
    /// `SQLITE_LOCKED` within one shared cache).
    var isBusy: Bool {
        switch code {
        case .busy, .locked: true
        default: false
        }
    }

    init(code: Int32, message: String, systemErrno: Int32 = 0) {
        self.code = ResultCode(rawValue: code)
        self.message = message
        self.systemErrno = systemErrno
    }

    /// Reads the code and message of the last failure on `handle`.
    init(code: Int32, handle: OpaquePointer?) {
        guard let handle else {
            self.init(code: code, message: String(cString: sqlite3_errstr(code)))
            return
        }
        let extended = sqlite3_extended_errcode(handle)
        // The extended code belongs to the most recent error; when the failing call did not
        // set it (rare), keep the code the call returned.
        // The system error belongs to the last failed I/O: only meaningful for open and I/O
        // failures, the kinds that have one.
        let primary = code & 0xFF
        let system = primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR || primary == SQLITE_READONLY
            ? sqlite3_system_errno(handle) : 0
        self.init(
            code: extended & 0xFF == code & 0xFF ? extended : code,
            message: String(cString: sqlite3_errmsg(handle)), systemErrno: system)
    }
}
