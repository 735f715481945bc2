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
/// Two implementations write these same bytes (see ``Engine``): ``RecordJSONEncoder`` and
/// ``RecordJSONDecoder``, built for many small payloads and used by default, and Foundation's
/// `JSONEncoder`/`JSONDecoder` (``makeEncoder(_:)`` and ``makeDecoder(_:)``), the reference.
///
/// One limit of determinism: a `Set`, or a dictionary whose keys are neither `String` nor `Int`,
/// encodes in hash order, which can differ between launches. Such an item is still stored and
/// read correctly, but may be rewritten (with a new version) when saved unchanged. Prefer sorted
/// arrays and string-keyed dictionaries in stored types.
public enum RecordCoding {
    /// Which implementation encodes and decodes payloads. Both write the same bytes.
    public enum Engine: Sendable, Hashable {
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

/// The encoder and decoder of one ``RecordCoding/Engine``, for a repository or a bulk
/// operation: one instance reuses its buffers for every record. Not thread-safe.
struct PayloadCoder {
    private let fastEncoder: RecordJSONEncoder?
    private let fastDecoder: RecordJSONDecoder?
    private let foundationEncoder: JSONEncoder?
    private let foundationDecoder: JSONDecoder?

    init(_ engine: RecordCoding.Engine, strategies: RecordCoding.Strategies = .default) {
        switch engine {
        case .recordJSON:
            fastEncoder = RecordJSONEncoder(strategies: strategies)
            fastDecoder = RecordJSONDecoder(strategies: strategies)
            foundationEncoder = nil
            foundationDecoder = nil
        case .foundation:
            fastEncoder = nil
            fastDecoder = nil
            foundationEncoder = RecordCoding.makeEncoder(strategies)
            foundationDecoder = RecordCoding.makeDecoder(strategies)
        }
    }

    func encode<T: Encodable>(_ value: T) throws -> Data {
        if let fastEncoder { return try fastEncoder.encode(value) }
        return try foundationEncoder!.encode(value)
    }

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let fastDecoder { return try fastDecoder.decode(type, from: data) }
        return try foundationDecoder!.decode(type, from: data)
    }

    /// `decode(_:from:)` of borrowed bytes, copied only for Foundation's decoder.
    func decode<T: Decodable>(_ type: T.Type, fromBytes bytes: UnsafeRawBufferPointer) throws -> T {
        if let fastDecoder { return try fastDecoder.decode(type, fromBytes: bytes) }
        return try foundationDecoder!.decode(type, from: Data(bytes))
    }
}

/// An ID type that chooses its own record key.
///
/// Repositories key each item's record by a stable string form of its ID. Conform an ID type
/// to this protocol to choose that form yourself; `init?(recordKey:)` must accept exactly the
/// keys `recordKey` produces.
///
/// Without a conformance, the rule is: a `UUID` gives its `uuidString` (upper case); a
/// `LosslessStringConvertible` ID (`String`, `Int`, …) gives its `description`; any other ID
/// gives its JSON encoding by ``RecordCoding`` (for example `{"shelf":2,"slot":7}`). The
/// key is part of the stored data: changing the rule for an existing type orphans its records.
public protocol RecordKeyConvertible {
    /// The record key for this ID. Must not be empty.
    var recordKey: String { get }
    /// The ID whose ``recordKey`` is `recordKey`, or nil if `recordKey` is not such a key.
    init?(recordKey: String)
}

/// The key rule described on ``RecordKeyConvertible``.
enum RecordKeys {
    /// Whether an app conformed these ID types to `RecordKeyConvertible` (checked once).
    private static let customString = String.self is any RecordKeyConvertible.Type
    private static let customUUID = UUID.self is any RecordKeyConvertible.Type
    private static let customInt = Int.self is any RecordKeyConvertible.Type

    /// The record key of `id`.
    static func key<ID: Encodable>(for id: ID) throws -> String {
        // The common ID types first, without a protocol-conformance lookup per call (the
        // rule is the same: these types are not RecordKeyConvertible unless an app made them so).
        if ID.self == String.self, !Self.customString { return unsafeBitCast(id, to: String.self) }
        if ID.self == UUID.self, !Self.customUUID { return unsafeBitCast(id, to: UUID.self).uuidString }
        if ID.self == Int.self, !Self.customInt { return String(unsafeBitCast(id, to: Int.self)) }
        if let custom = id as? any RecordKeyConvertible { return custom.recordKey }
        if let uuid = id as? UUID { return uuid.uuidString }
        if let lossless = id as? any LosslessStringConvertible { return lossless.description }
        return String(decoding: try RecordCoding.encode(id), as: UTF8.self)
    }

    /// The ID whose key is `key`, or nil when no ID of type `ID` has that key.
    static func id<ID: Codable>(forKey key: String, as type: ID.Type = ID.self) -> ID? {
        let candidate: ID?
        if let custom = type as? any RecordKeyConvertible.Type {
            candidate = custom.init(recordKey: key) as? ID
        } else if type == UUID.self {
            candidate = UUID(uuidString: key) as? ID
        } else if let lossless = type as? any LosslessStringConvertible.Type {
            candidate = lossless.init(key) as? ID
        } else {
            do {
                candidate = try RecordCoding.decode(type, from: Data(key.utf8))
            } catch {
                // Not the JSON of an ID: the caller reports the key as not an ID.
                return nil
            }
        }
        // Only a key the rule itself produces names an ID ("007" is not the key of 7).
        guard let candidate else { return nil }
        do {
            return try RecordNames.normalized(Self.key(for: candidate)) == RecordNames.normalized(key) ? candidate : nil
        } catch {
            // An ID that decodes but does not encode again has no key.
            return nil
        }
    }
}
