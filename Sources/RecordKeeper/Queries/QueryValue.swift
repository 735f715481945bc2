public import Foundation

/// A value a query compares a stored JSON field with, as the payload's JSON holds it.
///
/// Values compare as SQLite compares what `json_extract` returns: numbers numerically
/// (integers and doubles with each other), strings by their UTF-8 bytes (code point order,
/// SQLite's `BINARY` collation), `true` and `false` as the integers 1 and 0. Across kinds,
/// `null` < numbers < strings. A ``date(_:)`` is written as the collection's recorded date
/// strategy writes it (format 6, `collections.payload_coding`), so it compares as stored.
///
/// Literals work: `"due"`, `7`, `2.5`, `true`, `nil`.
public enum QueryValue: Sendable, Hashable, Codable {
    /// JSON `null` (also what a missing field reads as).
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer.
    case integer(Int64)
    /// A floating-point number.
    case double(Double)
    /// A string.
    case string(String)
    /// A date, written as the collection's payloads write dates.
    case date(Date)
}

extension QueryValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension QueryValue {
    /// The value a JSON scalar (as an encoder writes it: `null`, `true`, a number, a quoted
    /// string) stands for; nil when `json` is not one (an object, an array, or not JSON).
    init?(jsonScalar json: Data) {
        guard let text = String(data: json, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            let first = text.utf8.first
        else { return nil }
        switch text {
        case "null": self = .null
        case "true": self = .bool(true)
        case "false": self = .bool(false)
        default:
            if first == UInt8(ascii: "\"") {
                do {
                    self = .string(try JSONDecoder().decode(String.self, from: Data(text.utf8)))
                } catch {
                    return nil  // not a JSON string: not a scalar (the caller names the value)
                }
            } else if text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) || Int64(text) == nil {
                guard let number = Double(text), number.isFinite else { return nil }
                self = .double(number)
            } else {
                self = .integer(Int64(text)!)
            }
        }
    }

    /// The value with any ``date(_:)`` written by `coder` (the collection's date strategy).
    func resolved(with coder: PayloadCoder, field: FieldPath) throws -> QueryValue {
        guard case .date(let date) = self else { return self }
        return try Self.encoded(date, with: coder, field: field)
    }

    /// `value` as `coder` writes it, which must be a JSON scalar.
    static func encoded<V: Encodable>(_ value: V, with coder: PayloadCoder, field: FieldPath) throws -> QueryValue {
        let json: Data
        do {
            json = try coder.encode(value)
        } catch {
            throw QueryError(.unencodableValue, field: field, detail: "\(V.self) does not encode: \(error)")
        }
        guard let scalar = QueryValue(jsonScalar: json) else {
            throw QueryError(
                .unencodableValue, field: field,
                detail: "\(V.self) encodes as \(String(decoding: json.prefix(80), as: UTF8.self)), not as a JSON scalar")
        }
        return scalar
    }
}
