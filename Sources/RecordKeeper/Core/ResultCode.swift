import CSQLite

/// An SQLite result code, primary or extended, with names for the codes the library acts on
/// (GRDB's `ResultCode` is the model), so that no layer above `Core/` compares numbers or
/// imports SQLite to read a failure.
///
/// A primary code as a pattern matches each of its extended codes; outside a `switch`, say
/// it with ``matches(_:)`` (`failure.code.matches(.readOnly)`), never with `~=` written by
/// hand, whose operands are easy to swap:
/// ```swift
/// switch failure.code {
/// case .busy, .locked: …            // also SQLITE_BUSY_SNAPSHOT, SQLITE_LOCKED_SHAREDCACHE
/// case .constraintUnique: …         // only that extended code
/// default: …
/// }
/// ```
struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as SQLite returned it (an extended code when the connection reported one).
    let rawValue: Int32

    init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The primary code: the low byte of an extended code.
    var primary: ResultCode { ResultCode(rawValue: rawValue & 0xFF) }

    /// Whether this is a primary code (no extended information).
    var isPrimary: Bool { rawValue & ~0xFF == 0 }

    var description: String { String(rawValue) }

    /// A primary pattern matches its extended codes; an extended pattern only itself.
    static func ~= (pattern: ResultCode, code: ResultCode) -> Bool {
        pattern.isPrimary ? pattern.rawValue == code.rawValue & 0xFF : pattern.rawValue == code.rawValue
    }

    /// Whether this code is `pattern` or, for a primary `pattern`, one of its extended codes.
    func matches(_ pattern: ResultCode) -> Bool {
        pattern ~= self
    }

    // Primary codes.
    static let error = ResultCode(rawValue: SQLITE_ERROR)
    static let busy = ResultCode(rawValue: SQLITE_BUSY)
    static let locked = ResultCode(rawValue: SQLITE_LOCKED)
    static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
    static let interrupt = ResultCode(rawValue: SQLITE_INTERRUPT)
    static let ioError = ResultCode(rawValue: SQLITE_IOERR)
    static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
    static let full = ResultCode(rawValue: SQLITE_FULL)
    static let cannotOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
    static let tooBig = ResultCode(rawValue: SQLITE_TOOBIG)
    static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
    static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)

    // Extended codes (C macros Swift does not import: primary | (n << 8)).
    /// `SQLITE_IOERR_SHORT_READ`: a read found the file ending first.
    static let ioErrorShortRead = ResultCode(rawValue: SQLITE_IOERR | (2 << 8))
    /// `SQLITE_IOERR_SHMOPEN`, `SQLITE_IOERR_SHMSIZE`, `SQLITE_IOERR_SHMMAP`: the log's index
    /// (`-shm`) could not be opened, grown (a full disk) or mapped.
    static let ioErrorShmOpen = ResultCode(rawValue: SQLITE_IOERR | (18 << 8))
    static let ioErrorShmSize = ResultCode(rawValue: SQLITE_IOERR | (19 << 8))
    static let ioErrorShmMap = ResultCode(rawValue: SQLITE_IOERR | (21 << 8))
    /// `SQLITE_CONSTRAINT_NOTNULL`: a NOT NULL column was given NULL.
    static let constraintNotNull = ResultCode(rawValue: SQLITE_CONSTRAINT | (5 << 8))
    /// `SQLITE_CONSTRAINT_UNIQUE`: a UNIQUE constraint or index refused the row.
    static let constraintUnique = ResultCode(rawValue: SQLITE_CONSTRAINT | (8 << 8))
    /// `SQLITE_ABORT_ROLLBACK`: a statement of a transaction that was rolled back.
    static let abortRollback = ResultCode(rawValue: SQLITE_ABORT | (2 << 8))
}
