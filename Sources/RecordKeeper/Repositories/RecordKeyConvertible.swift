import Foundation

/// An ID type that chooses its own record key.
///
/// Repositories key each item's record by a stable string form of its ID. Conform an ID type
/// to this protocol to choose that form yourself; `init?(recordKey:)` must accept exactly the
/// keys `recordKey` produces.
///
/// Without a conformance, the rule is: a `UUID` gives its `uuidString` (upper case); a
/// `LosslessStringConvertible` ID (`String`, `Int`, …) gives its `description`; any other ID
/// gives its JSON encoding by ``/RecordKeeperCoding/RecordCoding`` (for example `{"shelf":2,"slot":7}`). The
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
