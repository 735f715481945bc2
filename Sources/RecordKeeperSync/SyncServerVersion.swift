/// A record's version on the sync server.
///
/// It is the value of the space's change counter at the operation that last wrote the record,
/// so it grows with every write of the record, and comparing it with a ``SyncCursor``'s counter
/// says whether a pull from that cursor has seen the write.
public struct SyncServerVersion: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The version number: the space's counter when the record was written. Larger is newer.
    public let rawValue: Int64

    /// Wraps a version number.
    public init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    public static func < (lhs: SyncServerVersion, rhs: SyncServerVersion) -> Bool {
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

/// Where a pull resumes: everything up to it has been delivered.
///
/// A cursor is the space's change ``counter`` after a complete pull, or, when a page was cut
/// short by its limit, the counter and ``position`` of the last change delivered (changes with
/// one counter value are ordered by collection, then key, in byte order). Store it with the
/// changes it follows from, in one local transaction; it only ever moves forward.
public struct SyncCursor: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The last change delivered within ``SyncCursor/counter``, when a page was cut short.
    public struct Position: Sendable, Hashable, Codable {
        /// The collection of the last change delivered.
        public let collection: String
        /// The key of the last change delivered.
        public let key: String

        /// Creates a position.
        public init(collection: String, key: String) {
            self.collection = collection
            self.key = key
        }
    }

    /// Changes with a server version up to this counter were delivered (all of them if
    /// ``position`` is `nil`; those up to ``position`` within the counter itself otherwise).
    public let counter: Int64
    /// The last change delivered at ``counter``, or `nil` when every change of it was.
    public let position: Position?

    /// The cursor of a device that has pulled nothing yet.
    public static let start = SyncCursor(counter: 0)

    /// Creates a cursor.
    public init(counter: Int64, position: Position? = nil) {
        self.counter = counter
        self.position = position
    }

    /// Orders cursors as a pull advances: by counter, then position; a cursor without a
    /// position is after every position of its counter.
    public static func < (lhs: SyncCursor, rhs: SyncCursor) -> Bool {
        if lhs.counter != rhs.counter { return lhs.counter < rhs.counter }
        switch (lhs.position, rhs.position) {
        case (nil, _): return false
        case (_?, nil): return true
        case (let l?, let r?): return SyncOrdering.precedes(l.collection, l.key, r.collection, r.key)
        }
    }

    public var description: String {
        guard let position else { return "\(counter)" }
        return "\(counter)/\(position.collection)/\(position.key)"
    }
}

/// The order of changes within one counter value: collection, then key, comparing UTF-8 bytes
/// (PostgreSQL's "C" collation), so every implementation pages identically.
enum SyncOrdering {
    static func precedes(_ c1: String, _ k1: String, _ c2: String, _ k2: String) -> Bool {
        if c1 != c2 { return c1.utf8.lexicographicallyPrecedes(c2.utf8) }
        return k1.utf8.lexicographicallyPrecedes(k2.utf8)
    }
}
