import CSQLite

/// A failure reported by SQLite, before the store adds which operation, collection and key it
/// belonged to (`RecordStoreError+SQLite.swift` in `Store/` maps it).
struct SQLiteFailure: Error {
    /// The extended result code.
    let code: Int32
    /// `sqlite3_errmsg`, read at once after the failing call.
    let message: String
    /// The operating system's error number behind an I/O or open failure
    /// (`sqlite3_system_errno`), 0 when none or unknown.
    let systemErrno: Int32

    /// The primary result code (the low byte of the extended code).
    var primaryCode: Int32 { code & 0xFF }

    /// `SQLITE_CONSTRAINT_UNIQUE`: a UNIQUE constraint or index refused the row. (SQLite's
    /// extended codes are C macros Swift does not import: `SQLITE_CONSTRAINT | (8 << 8)`.)
    static let constraintUnique = SQLITE_CONSTRAINT | (8 << 8)

    /// Whether a UNIQUE constraint or index refused the row.
    var isUniqueConstraint: Bool { code == Self.constraintUnique }

    /// What kind of failure this is, for layers above that must not depend on SQLite's codes.
    enum Kind: Equatable {
        case notADatabase, corrupt, cannotOpen, readOnly, full, busy, ioError, tooBig, interrupted
        case other
    }

    var kind: Kind {
        switch primaryCode {
        case SQLITE_NOTADB: .notADatabase
        case SQLITE_CORRUPT: .corrupt
        case SQLITE_CANTOPEN: .cannotOpen
        case SQLITE_READONLY: .readOnly
        case SQLITE_FULL: .full
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_IOERR: .ioError
        case SQLITE_TOOBIG: .tooBig
        case SQLITE_INTERRUPT: .interrupted
        default: .other
        }
    }

    init(code: Int32, message: String, systemErrno: Int32 = 0) {
        self.code = code
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
