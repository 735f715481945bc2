public import Foundation

/// A statement parameter, bound by position (`$1`, `$2`, ...); never spliced into SQL.
///
/// Scalars travel in libpq's binary format with their type; text and arrays travel in text
/// format and take the type the SQL gives them (`$1::text[]`).
///
/// ```swift
/// try connection.execute(
///     "SELECT key FROM t WHERE space = $1 AND version > $2 AND key = ANY($3::text[])",
///     [.text(space), .int64(after), .textArray(keys)])
/// ```
public enum PostgresValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A string, text format; the server infers its type from the statement.
    case text(String)
    /// A 64-bit integer (`bigint`), binary format.
    case int64(Int64)
    /// A boolean, binary format.
    case bool(Bool)
    /// Bytes (`bytea`), binary format.
    case bytes(Data)
    /// An array of strings and NULLs as a text-format array literal; cast it in SQL
    /// (`$1::text[]`, `$1::uuid[]`, `$1::bigint[]`).
    case textArray([String?])

    /// The bytes sent, the type OID (0: inferred by the server) and the format (0 text,
    /// 1 binary). Text values end with a NUL byte, as libpq reads them as C strings.
    func encoded() throws(PostgresError) -> (bytes: [UInt8]?, type: UInt32, format: Int32) {
        switch self {
        case .null:
            return (nil, 0, 0)
        case .text(let string):
            try Self.checkNoNUL(string)
            return (Array(string.utf8) + [0], 0, 0)
        case .int64(let value):
            return (withUnsafeBytes(of: value.bigEndian) { Array($0) }, 20, 1)
        case .bool(let value):
            return ([value ? 1 : 0], 16, 1)
        case .bytes(let data):
            return (Array(data), 17, 1)
        case .textArray(let elements):
            return (try Self.arrayLiteral(elements) + [0], 0, 0)
        }
    }

    /// `{"a","b\"c",NULL}`: every element quoted, `\` and `"` escaped, so any string is one
    /// element, and the word NULL is only ever the SQL NULL when unquoted.
    static func arrayLiteral(_ elements: [String?]) throws(PostgresError) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(elements.count * 16 + 2)
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let element else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                switch byte {
                case 0:
                    throw PostgresError(
                        .invalidArgument, operation: "bind a parameter",
                        message: "a string parameter contains a NUL character")
                case UInt8(ascii: "\\"), UInt8(ascii: "\""):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                default:
                    bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private static func checkNoNUL(_ string: String) throws(PostgresError) {
        if string.utf8.contains(0) {
            throw PostgresError(
                .invalidArgument, operation: "bind a parameter",
                message: "a string parameter contains a NUL character")
        }
    }
}
