import CSQLite
import Foundation

extension Statement {
    /// Binds a UUID as its 16 bytes (a BLOB), the form of `outbox.id` (docs/FORMAT.md).
    func bind(_ value: UUID, at index: Int32) throws(SQLiteFailure) {
        let code = withUnsafeBytes(of: value.uuid) { bytes in
            sqlite3_bind_blob(handle, index, bytes.baseAddress, 16, recordkeeper_sqlite_transient())
        }
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: sqlite3_db_handle(handle)) }
    }

    /// The 16-byte BLOB at `column` as a UUID; nil for any other value.
    func uuid(at column: Int32) -> UUID? {
        guard sqlite3_column_type(handle, column) == SQLITE_BLOB, byteCount(at: column) == 16,
            let bytes = sqlite3_column_blob(handle, column)
        else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: 16)) }
        return UUID(uuid: value)
    }
}
