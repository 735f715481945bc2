public import Foundation

/// The JSON encoding repositories use for record payloads.
///
/// It is deterministic for the same value: object keys are sorted (`.sortedKeys`), so an
/// unchanged item encodes to the same bytes and the store skips rewriting it. Dates are
/// encoded as their exact `timeIntervalSinceReferenceDate` (`.deferredToDate`), which
/// round-trips to an equal `Date`, unless other ``Strategies`` are chosen (ISO 8601, which drops
/// the sub-second part, seconds or milliseconds since 1970; snake-case keys). Data is Base64;
/// non-finite floating-point values throw rather than being stored as something else.
///
/// Two implementations write these same bytes (see ``Implementation``): ``RecordJSONEncoder`` and
/// ``RecordJSONDecoder``, built for many small payloads and used by default, and Foundation's
/// `JSONEncoder`/`JSONDecoder` (``makeEncoder(_:)`` and ``makeDecoder(_:)``), the reference.
///
/// One limit of determinism: a `Set`, or a dictionary whose keys are neither `String` nor `Int`,
/// encodes in hash order, which can differ between launches. Such an item is still stored and
/// read correctly, but may be rewritten (with a new version) when saved unchanged. Prefer sorted
/// arrays and string-keyed dictionaries in stored types.
public enum RecordCoding {
    /// Which implementation encodes and decodes payloads. Both write the same bytes.
    public enum Implementation: Sendable, Hashable {
        /// ``RecordJSONEncoder`` and ``RecordJSONDecoder``: the default, several times faster.
        case recordJSON
        /// Foundation's `JSONEncoder` and `JSONDecoder` with the settings above. Choose it for
        /// a type whose `Codable` code relies on something the fast coders do not do (see
        /// ``RecordJSONDecoder``), or to compare.
        case foundation
    }

    /// A new Foundation `JSONEncoder` with the settings described above and `strategies`
    /// (Foundation's defaults unless given): the reference ``RecordJSONEncoder`` matches byte
    /// for byte.
    public static func makeEncoder(_ strategies: Strategies = .default) -> JSONEncoder {
        makeFoundationEncoder(userInfo: [:], strategies: strategies)
    }

    /// A new Foundation `JSONDecoder` matching ``makeEncoder(_:)``.
    public static func makeDecoder(_ strategies: Strategies = .default) -> JSONDecoder {
        makeFoundationDecoder(userInfo: [:], strategies: strategies)
    }

    static func makeFoundationEncoder(
        userInfo: [CodingUserInfoKey: any Sendable], strategies: Strategies = .default
    ) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = foundationStrategy(strategies.dates)
        encoder.keyEncodingStrategy = strategies.keys == .snakeCase ? .convertToSnakeCase : .useDefaultKeys
        encoder.dataEncodingStrategy = .base64
        encoder.nonConformingFloatEncodingStrategy = .throw
        encoder.userInfo = userInfo
        return encoder
    }

    static func makeFoundationDecoder(
        userInfo: [CodingUserInfoKey: any Sendable], strategies: Strategies = .default
    ) -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = foundationStrategy(strategies.dates)
        decoder.keyDecodingStrategy = strategies.keys == .snakeCase ? .convertFromSnakeCase : .useDefaultKeys
        decoder.dataDecodingStrategy = .base64
        decoder.nonConformingFloatDecodingStrategy = .throw
        decoder.userInfo = userInfo
        return decoder
    }

    /// The payload for `value`, written by ``RecordJSONEncoder``.
    /// - Throws: `EncodingError` when the value cannot be encoded.
    public static func encode<T: Encodable>(_ value: T) throws -> Data {
        try RecordJSONEncoder().encode(value)
    }

    /// The value stored in `data`, read by ``RecordJSONDecoder``.
    /// - Throws: `DecodingError` when the payload is not a valid `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try RecordJSONDecoder().decode(type, from: data)
    }
}
