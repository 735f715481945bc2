public import Foundation

/// The version of a stored record. Every write that changes the record's payload gives it a
/// larger version, and a record removed and written again never gets an old version back, so
/// two reads of a record see the same version exactly when no write changed it in between.
/// Versions are compared per record (two records may have equal versions).
public struct RecordVersion: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The version number. Larger is newer.
    public let rawValue: Int64

    /// Wraps a version number.
    public init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    public static func < (lhs: RecordVersion, rhs: RecordVersion) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { String(rawValue) }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// One record as stored: its key, payload and version.
public struct StoredRecord: Sendable, Equatable {
    /// The record's key within its collection.
    public let key: String
    /// The payload bytes.
    public let data: Data
    /// Its version, changed by every write that changed it.
    public let version: RecordVersion

    /// Creates a record value.
    public init(key: String, data: Data, version: RecordVersion) {
        self.key = key
        self.data = data
        self.version = version
    }
}

/// A collection's name with its size.
public struct CollectionSummary: Sendable, Equatable {
    /// The collection name.
    public let name: String
    /// How many records it holds (0 for an established, empty collection).
    public let recordCount: Int
    /// The sum of its payload sizes in bytes.
    public let payloadBytes: Int

    /// Creates a summary value.
    public init(name: String, recordCount: Int, payloadBytes: Int) {
        self.name = name
        self.recordCount = recordCount
        self.payloadBytes = payloadBytes
    }
}
