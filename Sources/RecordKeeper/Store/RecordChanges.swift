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
///
/// A change stream (``RecordStore/changes(in:)``) that fell behind the trimmed change log
/// yields a **full state** instead (``isFullState``): every record of the collection, and
/// nothing else exists. ``applying(to:)`` and ``merge(_:)`` honour it by replacing; a copy kept
/// with the `upserts`/`removals` loop must check it, or it keeps records removed meanwhile.
public struct RecordChanges: Sendable, Equatable {
    /// Payloads to insert or overwrite, by key. In a full state: every record of the collection.
    public private(set) var upserts: [String: Data]
    /// Keys to remove. Removing a key that is not stored is not an error. Empty in a full state.
    public private(set) var removals: Set<String>
    /// True when ``upserts`` is the whole collection: every record not in it was removed, named
    /// or not. Only a change stream that fell behind the change log yields one; writes
    /// (``RecordStore/apply(_:changes:expecting:enqueue:)``,
    /// ``RecordTransaction/apply(_:changes:expecting:enqueue:)``) refuse it with
    /// ``RecordStoreError/Code-swift.struct/invalidArgument``: replacing a collection is
    /// ``RecordStore/replace(_:values:onlyIfAbsent:)``.
    public private(set) var isFullState = false

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

    /// The full state of a collection holding exactly `records` (see ``isFullState``): what a
    /// change stream yields after it fell behind, for tests of code that consumes streams.
    ///
    /// ```swift
    /// let resync = RecordChanges(fullState: ["a": Data("1".utf8)])
    /// #expect(resync.applying(to: ["a": Data(), "gone": Data()]) == ["a": Data("1".utf8)])
    /// ```
    public init(fullState records: [String: Data]) {
        upserts = records
        removals = []
        isFullState = true
    }

    /// True when the change has neither upserts nor removals and is no full state (an empty
    /// full state says the collection is empty now).
    public var isEmpty: Bool { upserts.isEmpty && removals.isEmpty && !isFullState }

    /// How many records the change names.
    public var count: Int { upserts.count + removals.count }

    /// The payload to upsert for `key`, or nil. Assigning nil marks `key` for removal (in a
    /// full state it just leaves `key` out).
    public subscript(key: String) -> Data? {
        get { upserts[key] }
        set {
            if let newValue {
                upserts[key] = newValue
                removals.remove(key)
            } else {
                upserts.removeValue(forKey: key)
                if !isFullState { removals.insert(key) }
            }
        }
    }

    /// The collection contents after applying this change to `existing`: for a full state,
    /// ``upserts`` whatever `existing` holds.
    ///
    /// - Complexity: O(*n* + *m*) for *n* existing records and *m* changed keys.
    public func applying(to existing: [String: Data]) -> [String: Data] {
        if isFullState { return upserts }
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

    /// Merges a later change into this one: for a key named by both, `later` wins. A later
    /// full state replaces this change; a change merged into a full state keeps it one.
    public mutating func merge(_ later: RecordChanges) {
        if later.isFullState {
            self = later
            return
        }
        for key in later.removals { self[key] = nil }
        for (key, value) in later.upserts { self[key] = value }
    }
}
