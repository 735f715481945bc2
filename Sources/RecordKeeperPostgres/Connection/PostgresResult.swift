internal import CLibPQ
public import Foundation

/// The rows a statement returned, read by row and column index.
///
/// Values are decoded from libpq's text or binary format by the column's type (bigint,
/// integer, smallint, boolean, bytea, text, uuid).
///
/// `@unchecked Sendable`: the wrapped `PGresult` is never modified after libpq returns it, and
/// libpq documents such results as read-only and free to pass between threads; every stored
/// property is a `let`, and `PQclear` runs only in `deinit`, when no one holds the result.
public final class PostgresResult: @unchecked Sendable {
    private let handle: OpaquePointer
    private let operation: String

    /// The number of rows.
    public let rowCount: Int
    /// The number of columns.
    public let columnCount: Int

    init(handle: OpaquePointer, operation: String) {
        self.handle = handle
        self.operation = operation
        rowCount = Int(PQntuples(handle))
        columnCount = Int(PQnfields(handle))
    }

    deinit {
        PQclear(handle)
    }

    /// The number of rows an INSERT, UPDATE or DELETE affected (0 for other statements).
    public var affectedRowCount: Int {
        Int(String(cString: PQcmdTuples(handle))) ?? 0
    }

    /// Whether the value is SQL NULL.
    public func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) == 1
    }

    /// The value as a string (text, or any type's text form).
    public func string(_ row: Int, _ column: Int) throws(PostgresError) -> String {
        let bytes = try raw(row, column)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The value as a string, or `nil` for NULL.
    public func optionalString(_ row: Int, _ column: Int) throws(PostgresError) -> String? {
        isNull(row, column) ? nil : try string(row, column)
    }

    /// The value of an integer column (bigint, integer, smallint).
    public func int64(_ row: Int, _ column: Int) throws(PostgresError) -> Int64 {
        let bytes = try raw(row, column)
        if isBinary(column) {
            var value: Int64 = 0
            for byte in bytes { value = value << 8 | Int64(byte) }
            // Sign-extend the narrower integer types.
            let bits = bytes.count * 8
            if bits < 64, bits > 0, value & (1 << (bits - 1)) != 0 { value -= 1 << bits }
            return value
        }
        guard let value = Int64(String(decoding: bytes, as: UTF8.self)) else {
            throw unexpected("column \(column) is not an integer")
        }
        return value
    }

    /// The value as an integer, or `nil` for NULL.
    public func optionalInt64(_ row: Int, _ column: Int) throws(PostgresError) -> Int64? {
        isNull(row, column) ? nil : try int64(row, column)
    }

    /// The value of a boolean column.
    public func bool(_ row: Int, _ column: Int) throws(PostgresError) -> Bool {
        let bytes = try raw(row, column)
        if isBinary(column) { return bytes.first == 1 }
        return bytes.first == UInt8(ascii: "t")
    }

    /// The value of a bytea column (hex text format `\x…`, or binary).
    public func data(_ row: Int, _ column: Int) throws(PostgresError) -> Data {
        let bytes = try raw(row, column)
        if isBinary(column) { return Data(bytes) }
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"),
            bytes.count % 2 == 0
        else { throw unexpected("column \(column) is not bytea in hex format") }
        var data = Data(capacity: (bytes.count - 2) / 2)
        var index = 2
        while index < bytes.count {
            guard let high = Self.hexValue(bytes[index]), let low = Self.hexValue(bytes[index + 1])
            else { throw unexpected("column \(column) has a bad hex digit") }
            data.append(high << 4 | low)
            index += 2
        }
        return data
    }

    /// The value of a uuid column.
    public func uuid(_ row: Int, _ column: Int) throws(PostgresError) -> UUID {
        let bytes = try raw(row, column)
        if isBinary(column), bytes.count == 16 {
            return UUID(uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14],
                bytes[15]))
        }
        guard let uuid = UUID(uuidString: String(decoding: bytes, as: UTF8.self)) else {
            throw unexpected("column \(column) is not a uuid")
        }
        return uuid
    }

    private func isBinary(_ column: Int) -> Bool {
        PQfformat(handle, Int32(column)) == 1
    }

    /// The value's bytes; a NULL where a value was expected is an error.
    private func raw(_ row: Int, _ column: Int) throws(PostgresError) -> UnsafeRawBufferPointer {
        guard row < rowCount, column < columnCount else {
            throw unexpected("no value at row \(row), column \(column)")
        }
        if isNull(row, column) { throw unexpected("column \(column) of row \(row) is NULL") }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let pointer = PQgetvalue(handle, Int32(row), Int32(column)) else {
            throw unexpected("no value at row \(row), column \(column)")
        }
        return UnsafeRawBufferPointer(start: pointer, count: length)
    }

    private func unexpected(_ message: String) -> PostgresError {
        PostgresError(.unexpectedResult, operation: operation, message: message)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
