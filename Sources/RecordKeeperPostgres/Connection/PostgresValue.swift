public import Foundation

/// A statement parameter, bound by position (`$1`, `$2`, ...); never spliced into SQL.
///
/// Scalars travel in libpq's binary format with their type; text and ``textArray(_:)`` travel
/// in text format and take the type the SQL gives them (`$1::text[]`). The typed arrays
/// (``binaryTextArray(_:)``, ``byteaArray(_:)``, ``int64Array(_:)``, ``uuidArray(_:)``,
/// ``boolArray(_:)``) travel in
/// PostgreSQL's binary array format: no escaping, no hex, nothing for the server to parse.
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
    /// An array of strings and NULLs (`text[]`), binary format: each element's UTF-8 bytes as
    /// they are, nothing escaped or parsed. A string with a NUL character is refused.
    case binaryTextArray([String?])
    /// An array of byte strings and NULLs (`bytea[]`), binary format.
    case byteaArray([Data?])
    /// An array of 64-bit integers and NULLs (`bigint[]`), binary format.
    case int64Array([Int64?])
    /// An array of UUIDs (`uuid[]`), binary format.
    case uuidArray([UUID])
    /// An array of booleans (`boolean[]`), binary format.
    case boolArray([Bool])

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
        case .binaryTextArray(let elements):
            var array = BinaryArray(
                elementType: 25, count: elements.count, bytes: elements.reduce(0) { $0 + ($1?.utf8.count ?? 0) })
            for element in elements {
                guard let element else {
                    array.appendNull()
                    continue
                }
                try Self.checkNoNUL(element)
                array.append(element.utf8)
            }
            return (array.finish(), 1009, 1)
        case .byteaArray(let elements):
            var array = BinaryArray(elementType: 17, count: elements.count, bytes: elements.reduce(0) { $0 + ($1?.count ?? 0) })
            for element in elements {
                if let element { array.append(element) } else { array.appendNull() }
            }
            return (array.finish(), 1001, 1)
        case .int64Array(let elements):
            var array = BinaryArray(elementType: 20, count: elements.count, bytes: elements.count * 8)
            for element in elements {
                if let element { array.append(integer: element) } else { array.appendNull() }
            }
            return (array.finish(), 1016, 1)
        case .uuidArray(let elements):
            var array = BinaryArray(elementType: 2950, count: elements.count, bytes: elements.count * 16)
            for element in elements {
                withUnsafeBytes(of: element.uuid) { array.append($0) }
            }
            return (array.finish(), 2951, 1)
        case .boolArray(let elements):
            var array = BinaryArray(elementType: 16, count: elements.count, bytes: elements.count)
            for element in elements {
                array.append(CollectionOfOne(element ? UInt8(1) : 0))
            }
            return (array.finish(), 1000, 1)
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

/// PostgreSQL's binary array format (`array_recv`), one dimension: dimension count, a has-NULLs
/// flag, the element type's OID, the length and lower bound, then each element as its length
/// (-1 for NULL) and bytes; every integer 4 bytes big-endian. An empty array has no dimension.
struct BinaryArray {
    private var bytes: [UInt8] = []
    private var hasNull = false
    private let count: Int

    init(elementType: UInt32, count: Int, bytes payload: Int) {
        self.count = count
        bytes.reserveCapacity(20 + count * 4 + payload)
        append32(count == 0 ? 0 : 1)
        append32(0)  // the has-NULLs flag, set in finish()
        append32(Int32(bitPattern: elementType))
        if count > 0 {
            append32(Int32(count))
            append32(1)
        }
    }

    private mutating func append32(_ value: Int32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ element: some Collection<UInt8>) {
        append32(Int32(element.count))
        bytes.append(contentsOf: element)
    }

    mutating func append(integer: Int64) {
        append32(8)
        withUnsafeBytes(of: integer.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func appendNull() {
        append32(-1)
        hasNull = true
    }

    consuming func finish() -> [UInt8] {
        if hasNull { bytes[7] = 1 }
        return bytes
    }
}
