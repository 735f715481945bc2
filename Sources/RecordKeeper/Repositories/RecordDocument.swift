public import Foundation

/// A value stored as many small records in one collection: it splits itself into named groups
/// of records (`positions/<book>`, `vocabulary/<word>`), is rebuilt from them, and has a schema
/// version. ``DocumentRepository`` saves it record by record, writing only what changed.
///
/// ```swift
/// struct Progress: RecordDocument, Equatable {
///     static let supportedSchemaVersions = 1...1
///     var schemaVersion = 1
///     var positions: [String: Int] = [:]          // book → page
///     var vocabulary: [String: String] = [:]      // word → translation
///
///     init() {}
///     init(from records: DocumentRecords) throws {
///         schemaVersion = records.schemaVersion
///         positions = try records.decode(Int.self, inGroup: "positions")
///         vocabulary = try records.decode(String.self, inGroup: "vocabulary")
///     }
///     func encode(to records: inout DocumentRecords) throws {
///         try records.encode(positions, inGroup: "positions")
///         try records.encode(vocabulary, inGroup: "vocabulary")
///     }
/// }
/// ```
public protocol RecordDocument: Sendable {
    /// The schema versions this type can read and write. A stored document, or a value, with
    /// a version outside this range is refused with ``RepositoryError/Code/unsupportedSchemaVersion``.
    static var supportedSchemaVersions: ClosedRange<Int> { get }

    /// The schema version of this value; saved as the document's `_schema` record.
    var schemaVersion: Int { get }

    /// Rebuilds the value from its records. `records.schemaVersion` is the stored version
    /// (already checked to be supported), so older layouts can be migrated here.
    /// - Throws: the errors of ``DocumentRecords``' decode methods (they name the key), or
    ///   your own when the records do not form a valid value.
    init(from records: DocumentRecords) throws

    /// Splits the value into records, with ``DocumentRecords``' encode methods.
    func encode(to records: inout DocumentRecords) throws
}

/// The records of one document: what ``RecordDocument/encode(to:)`` fills and
/// ``RecordDocument/init(from:)`` reads.
///
/// A record key is `<group>/<name>` for a group of records, or a single name. Group names and
/// single keys must not be empty, contain `/`, or start with `_` (reserved for the repository,
/// which stores the schema version as `_schema`). Payloads are encoded by ``/RecordKeeperCoding/RecordCoding``.
public struct DocumentRecords: Sendable {
    /// The collection the document lives in (for error messages).
    public let collection: String
    /// The document's schema version: the stored one when reading, the value's when writing.
    public var schemaVersion: Int
    /// Every record by key, the `_schema` record excepted. When reading, this includes records
    /// the document does not know (they are left alone).
    public private(set) var payloads: [String: Data]

    /// Creates a set of records, for example to test a document's encoding.
    public init(collection: String, schemaVersion: Int, payloads: [String: Data] = [:]) {
        self.collection = collection
        self.schemaVersion = schemaVersion
        self.payloads = payloads
    }

    // MARK: Groups

    /// Stores each value of `values` as the record `<group>/<name>`.
    /// - Throws: ``RepositoryError`` (`invalidDocumentKey` or `unencodableValue`).
    public mutating func encode<T: Encodable>(_ values: [String: T], inGroup group: String) throws {
        try check(group, "group name")
        let encoder = RecordJSONEncoder()  // one for the group: its buffers are reused
        for (name, value) in values {
            guard !name.isEmpty else {
                throw RepositoryError(
                    code: .invalidDocumentKey, collection: collection, key: group + "/",
                    detail: "a record name in group \(RecordStoreError.quoted(group)) is empty")
            }
            let key = group + "/" + name
            payloads[key] = try encode(value, key: key, encoder: encoder)
        }
    }

    /// Every record of `group`, decoded, by name (the part of the key after `<group>/`).
    /// An absent group gives `[:]`.
    /// - Throws: ``RepositoryError`` (`undecodableRecord`) naming the first key that does not
    ///   decode; no record is skipped.
    public func decode<T: Decodable>(_ type: T.Type, inGroup group: String) throws -> [String: T] {
        try check(group, "group name")
        let prefix = group + "/"
        var values: [String: T] = [:]
        let decoder = RecordJSONDecoder()  // one for the group: its buffers are reused
        for (key, data) in payloads where key.hasPrefix(prefix) {
            values[String(key.dropFirst(prefix.count))] = try decode(type, data, key: key, decoder: decoder)
        }
        return values
    }

    // MARK: Single records

    /// Stores `value` as the single record `key`.
    /// - Throws: ``RepositoryError`` (`invalidDocumentKey` or `unencodableValue`).
    public mutating func encode<T: Encodable>(_ value: T, forKey key: String) throws {
        try check(key, "key")
        payloads[key] = try encode(value, key: key, encoder: RecordJSONEncoder())
    }

    /// The single record `key`, decoded, or nil when it is not stored.
    /// - Throws: ``RepositoryError`` (`undecodableRecord`) naming the key.
    public func decode<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        try check(key, "key")
        guard let data = payloads[key] else { return nil }
        return try decode(type, data, key: key, decoder: RecordJSONDecoder())
    }

    // MARK: Helpers

    private func check(_ name: String, _ what: String) throws {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("_") else {
            throw RepositoryError(
                code: .invalidDocumentKey, collection: collection, key: name,
                detail: "a document \(what) must not be empty, contain \"/\" or start with \"_\"")
        }
    }

    private func encode<T: Encodable>(_ value: T, key: String, encoder: RecordJSONEncoder) throws -> Data {
        do {
            return try encoder.encode(value)
        } catch {
            throw RepositoryError(code: .unencodableValue, collection: collection, key: key, underlying: error)
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, _ data: Data, key: String, decoder: RecordJSONDecoder) throws -> T {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw RepositoryError(code: .undecodableRecord, collection: collection, key: key, underlying: error)
        }
    }
}
