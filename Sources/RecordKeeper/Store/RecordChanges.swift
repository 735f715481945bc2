public import Foundation

/// A record-level change to one collection: payloads to upsert and keys to remove.
///
/// It names exactly the records a save is entitled to change. Applying it never touches any
/// other record of the collection, so a narrow save cannot erase unrelated data that the
/// caller's (possibly older) snapshot did not contain. A key is never both upserted and
/// removed: assigning data moves it out of ``removals``, assigning nil out of ``upserts``.
///
/// ```swift
/// var changes = RecordChanges()
/// changes["positions/moby-dick"] = try JSONEncoder().encode(position)
/// changes["vocabulary/ballena"] = nil        // remove this record
/// try await store.apply("progress", changes: changes)
/// ```
public struct RecordChanges: Sendable, Equatable {
    /// Payloads to insert or overwrite, by key.
    public private(set) var upserts: [String: Data]
    /// Keys to remove. Removing a key that is not stored is not an error.
    public private(set) var removals: Set<String>

    /// An empty change.
    public init() {
        upserts = [:]
        removals = []
    }

    /// A change that upserts `upserts` and removes `removals`.
    ///
    /// A key in both ends up as an upsert, as if the removals had been assigned first.
    public init(upserts: [String: Data], removals: Set<String> = []) {
        self.upserts = upserts
        self.removals = removals.subtracting(upserts.keys)
    }

    /// True when the change has neither upserts nor removals.
    public var isEmpty: Bool { upserts.isEmpty && removals.isEmpty }

    /// How many records the change names.
    public var count: Int { upserts.count + removals.count }

    /// The payload to upsert for `key`, or nil. Assigning nil marks `key` for removal.
    public subscript(key: String) -> Data? {
        get { upserts[key] }
        set {
            if let newValue {
                upserts[key] = newValue
                removals.remove(key)
            } else {
                upserts.removeValue(forKey: key)
                removals.insert(key)
            }
        }
    }

    /// The collection contents after applying this change to `existing`.
    ///
    /// - Complexity: O(*n* + *m*) for *n* existing records and *m* changed keys.
    public func applying(to existing: [String: Data]) -> [String: Data] {
        var rows = existing
        for key in removals { rows.removeValue(forKey: key) }
        rows.merge(upserts) { _, new in new }
        return rows
    }

    /// The change that turns `old` into `new`: keys missing from `new` become removals, new or
    /// different payloads become upserts, equal payloads are left out.
    ///
    /// `RecordChanges.difference(from: a, to: b).applying(to: a) == b` always holds.
    public static func difference(from old: [String: Data], to new: [String: Data]) -> RecordChanges {
        var changes = RecordChanges()
        for key in old.keys where new[key] == nil { changes.removals.insert(key) }
        for (key, value) in new where old[key] != value { changes.upserts[key] = value }
        return changes
    }

    /// Merges a later change into this one: for a key named by both, `later` wins.
    public mutating func merge(_ later: RecordChanges) {
        for key in later.removals { self[key] = nil }
        for (key, value) in later.upserts { self[key] = value }
    }
}
