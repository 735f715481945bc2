import CSQLite
import Foundation

/// A prepared SQLite statement, owned by one `SQLiteConnection` and used only on its thread.
///
/// Cached statements are prepared once with `SQLITE_PREPARE_PERSISTENT`, kept by their
/// connection under the address of their `StaticString` SQL (see
/// `SQLiteConnection.statement(_:)`), and reset after each use; others (pragmas, one-off
/// scans) are prepared without that flag and finalized when released. Not `Sendable`: a
/// statement is only used by whoever holds its connection.
final class Statement {
    let handle: OpaquePointer
    let sql: String
    private let connection: OpaquePointer

    init(connection: OpaquePointer, sql: String, persistent: Bool) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(connection, sql, -1, flags, &handle, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(code: code, handle: connection)
            sqlite3_finalize(handle)
            throw failure
        }
        self.handle = handle
        self.sql = sql
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Clears the bindings and resets the statement so it can run again.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: Binding

    func bind(_ value: Int64, at index: Int32) throws(SQLiteFailure) {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    /// Binds text by its UTF-8 bytes and explicit length, so strings holding NUL survive intact.
    func bind(_ value: String, at index: Int32) throws(SQLiteFailure) {
        var text = value
        let code = text.withUTF8 { buffer -> Int32 in
            let base = buffer.baseAddress.map { UnsafeRawPointer($0) }
            // A NULL pointer would bind SQL NULL; an empty string needs a non-null pointer.
            return withUnsafePointer(to: 0 as UInt8) { empty in
                sqlite3_bind_text64(
                    handle, index, (base ?? UnsafeRawPointer(empty)).assumingMemoryBound(to: CChar.self),
                    UInt64(buffer.count), recordkeeper_sqlite_transient(), UInt8(SQLITE_UTF8))
            }
        }
        try check(code)
    }

    /// Binds a blob, copying it. An empty payload binds an empty blob, never NULL.
    func bind(_ value: Data, at index: Int32) throws(SQLiteFailure) {
        let code =
            value.isEmpty
            ? sqlite3_bind_zeroblob(handle, index, 0)
            : value.withUnsafeBytes { buffer in
                sqlite3_bind_blob64(
                    handle, index, buffer.baseAddress, UInt64(buffer.count), recordkeeper_sqlite_transient())
            }
        try check(code)
    }

    func bind(double value: Double, at index: Int32) throws(SQLiteFailure) {
        try check(sqlite3_bind_double(handle, index, value))
    }

    func bindNull(at index: Int32) throws(SQLiteFailure) {
        try check(sqlite3_bind_null(handle, index))
    }

    // MARK: Stepping

    /// Steps once; true when a row is available, false when the statement is done.
    func step() throws(SQLiteFailure) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let failure = SQLiteFailure(code: code, handle: connection)
            sqlite3_reset(handle)
            throw failure
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(SQLiteFailure) {
        while try step() {}
    }

    // MARK: Columns

    func int64(at column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    func isNull(at column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    /// Reads text by its byte length, so embedded NUL characters are kept.
    func string(at column: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The text of `column` when it is valid UTF-8 (embedded NUL characters kept); nil when
    /// it is not, where ``string(at:)`` would replace the invalid bytes and read another text.
    func validString(at column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        return StrictUTF8.string(UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column))))
    }

    func data(at column: Int32) -> Data {
        guard let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }

    /// The blob of `column`, borrowed: valid until the statement steps, resets or is finalized.
    func bytes(at column: Int32) -> UnsafeRawBufferPointer {
        guard let bytes = sqlite3_column_blob(handle, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func double(at column: Int32) -> Double {
        sqlite3_column_double(handle, column)
    }

    /// The storage class of a column of the current row.
    enum ColumnKind { case null, integer, real, text, blob }

    func kind(at column: Int32) -> ColumnKind {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: .null
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        default: .blob
        }
    }

    func byteCount(at column: Int32) -> Int {
        Int(sqlite3_column_bytes(handle, column))
    }

    private func check(_ code: Int32) throws(SQLiteFailure) {
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: connection) }
    }
}
