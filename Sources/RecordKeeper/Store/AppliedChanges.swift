/// What ``RecordStore/apply(_:changes:expecting:enqueue:)`` (or
/// ``RecordTransaction/apply(_:changes:expecting:enqueue:)``) actually did, counted inside its
/// transaction.
///
/// A change set names records; this says what became of each of them: written as new
/// (``added``), overwritten with a different payload (``changed``), left alone because the
/// stored payload was already byte-for-byte the same (``unchanged``), removed (``removed``),
/// or named for removal but not stored (``notFound``); and the version every upserted key has
/// after the write (``versions``). Keys appear as stored (normalized to NFC), each list in no
/// particular order.
///
/// ```swift
/// let applied = try await store.apply("notes", changes: changes)
/// if applied.writtenCount == 0 { print("already up to date") }
/// print("\(applied.added.count) added, \(applied.removed.count) removed")
/// let version = applied.versions["today"]   // what to expect in the next conditional write
/// ```
public struct AppliedChanges: Sendable, Equatable {
    /// Keys that did not exist and were inserted.
    public internal(set) var added: [String] = []
    /// Keys that existed with a different payload and were overwritten (their version grew).
    public internal(set) var changed: [String] = []
    /// Keys upserted with the payload already stored: nothing was written, the version kept.
    public internal(set) var unchanged: [String] = []
    /// Keys that existed and were removed.
    public internal(set) var removed: [String] = []
    /// Keys named for removal that were not stored: nothing to remove.
    public internal(set) var notFound: [String] = []
    /// The version of every upserted key after the write: a new version for ``added`` and
    /// ``changed`` keys, the stored one for ``unchanged`` keys (an identical payload keeps its
    /// version). Removed keys have none. It is filled by every apply, at no extra statement:
    /// the lookup that tells an insert from an overwrite reads the version too. Pass these
    /// versions as `expecting` to make the next write conditional on them.
    public internal(set) var versions: [String: RecordVersion] = [:]

    /// An empty summary: nothing was named.
    public init() {}

    /// How many records the apply wrote: added, changed and removed. Zero when every upsert
    /// was unchanged and every key to remove was absent.
    public var writtenCount: Int { added.count + changed.count + removed.count }
}
