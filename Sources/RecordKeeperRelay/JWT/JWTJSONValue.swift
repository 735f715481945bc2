import Foundation
import RecordKeeperCoding

/// A JSON value of a token's header or claims.
///
/// Decoding refuses an object that names a member twice: RFC 7515 §4 requires a parser to
/// reject duplicate header names (or keep the last), and the library's JSON decoder keeps the
/// first, so a token with `{"alg":"HS256","alg":"none"}` could otherwise read differently
/// here and elsewhere.
public enum JWTJSONValue: Sendable, Hashable, Codable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([JWTJSONValue])
    case object([String: JWTJSONValue])
    case null

    /// The string, or `nil` for another kind of value.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number, or `nil`.
    public var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The Boolean, or `nil`.
    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements of an array, or `nil`.
    public var array: [JWTJSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            var members: [String: JWTJSONValue] = [:]
            for key in object.allKeys {
                if members[key.stringValue] != nil {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: object, debugDescription: "the member \"\(key.stringValue)\" appears twice")
                }
                members[key.stringValue] = try object.decode(JWTJSONValue.self, forKey: key)
            }
            self = .object(members)
            return
        }
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JWTJSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JWTJSONValue.self)) }
            self = .array(elements)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let value):
            var container = encoder.singleValueContainer()
            // Whole numbers (times, counts) as integers: `1300819380`, not `1300819380.0`.
            if value == value.rounded(), abs(value) < 9e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .object(let members):
            var container = encoder.container(keyedBy: Key.self)
            for (name, value) in members { try container.encode(value, forKey: Key(stringValue: name)) }
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }

    /// The members of a JSON object in `bytes`, or why it is not one.
    static func object(from bytes: [UInt8], what: String) throws(JWTError) -> [String: JWTJSONValue] {
        let value: JWTJSONValue
        do {
            value = try RecordJSONDecoder().decode(JWTJSONValue.self, from: Data(bytes))
        } catch let DecodingError.dataCorrupted(context) {
            throw .malformed("the \(what) is not valid JSON: \(context.debugDescription)")
        } catch {
            throw .malformed("the \(what) is not valid JSON")
        }
        guard case .object(let members) = value else { throw .malformed("the \(what) is not a JSON object") }
        return members
    }
}
