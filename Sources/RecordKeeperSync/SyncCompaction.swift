package import Foundation

/// A ``RecordSyncServer`` that can forget: it deletes a space's operation outcomes and
/// tombstones that are older than an age and behind every cursor it handed out within that
/// age (docs/SYNC.md "Compaction").
///
/// `PostgresSyncServer` (module `RecordKeeperPostgres`, used by `recordkeeper-relay compact`)
/// and ``InMemorySyncServer`` implement it with the same rules.
///
/// ```swift
/// let done = try await server.compact(space: "alice", olderThan: .seconds(30 * 86_400))
/// print(done.horizon, done.deletedTombstones, done.deletedOperations)
/// ```
public protocol SyncCompactingServer: RecordSyncServer {
    /// Compacts `space`: moves its horizon as far as the age and the cursors handed out allow,
    /// then deletes the tombstones at or below the horizon and the outcomes of operations
    /// received before `now - age` (applied ones only when at or below the horizon), while
    /// pushes and pulls of the space go on.
    ///
    /// - Parameters:
    ///   - space: the space to compact.
    ///   - age: how old an outcome, a tombstone or a handed-out cursor must be to be passed;
    ///     at least ``SyncHorizon/minimumAge`` (one hour).
    /// - Returns: what was deleted and the space's horizon afterwards.
    /// - Throws: ``SyncError``: ``SyncError/Code/invalidRequest`` for an empty space or an age
    ///   below the minimum (nothing deleted); ``SyncError/Code/unreachable`` or
    ///   ``SyncError/Code/serverFailure`` (the batches deleted before stay deleted; running it
    ///   again goes on).
    func compact(space: String, olderThan age: Duration) async throws -> SyncCompaction
}

/// What one compaction of a space did.
public struct SyncCompaction: Sendable, Hashable, Codable {
    /// The space compacted.
    public var space: String
    /// The space's horizon after it: tombstones at or below it are deleted, and a pull from a
    /// cursor behind it is answered ``SyncError/Code/behindHorizon``.
    public var horizon: Int64
    /// The tombstones deleted now.
    public var deletedTombstones: Int
    /// The operation outcomes deleted now.
    public var deletedOperations: Int

    /// Creates a report.
    public init(space: String, horizon: Int64, deletedTombstones: Int, deletedOperations: Int) {
        self.space = space
        self.horizon = horizon
        self.deletedTombstones = deletedTombstones
        self.deletedOperations = deletedOperations
    }
}

/// The rules of the compaction horizon, in one place for every server implementation.
///
/// Servers record, per space and per hour (``bucketSeconds``), the lowest cursor they handed
/// out in that hour (its ``mark(of:)``). A compaction at `now` with age `a` moves the horizon to
/// the lowest of: every mark of an hour that overlaps `[now - a, now]`, and the highest version
/// of the operations received before `now - a` (so everything at or below the horizon is older
/// than the age). The horizon never moves back.
public enum SyncHorizon {
    /// The length of the time buckets cursors handed out are recorded in.
    public static let bucketSeconds: Int64 = 3600

    /// The smallest age a compaction accepts: one bucket, so that the hour a cursor was handed
    /// out in is always inside the window.
    public static let minimumAge: Duration = .seconds(bucketSeconds)

    /// The bucket (hours since 1970) of `date`.
    package static func bucket(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(bucketSeconds)).rounded(.down))
    }

    /// The counter up to which `cursor` has seen every change: its counter, or one below when it
    /// stops within its counter (a position).
    package static func mark(of cursor: SyncCursor) -> Int64 {
        cursor.position == nil ? cursor.counter : cursor.counter - 1
    }

    /// Whether a pull from `cursor` could miss a deletion compacted under `horizon`. The start
    /// never is: a pull from it is a resync.
    package static func isBehind(_ cursor: SyncCursor, horizon: Int64) -> Bool {
        cursor != .start && mark(of: cursor) < horizon
    }

    /// The error a pull behind the horizon gets.
    package static func behind(_ cursor: SyncCursor, horizon: Int64, space: String) -> SyncError {
        SyncError(
            .behindHorizon,
            "space \(space): cursor \(cursor) is behind the space's compaction horizon \(horizon) (this device was away "
                + "longer than the server keeps deletions): pull from the start to resync; nothing was read")
    }

    /// The new horizon: at least `current`, else the lowest of `lowestMark` (the lowest cursor
    /// handed out within the window, nil when none) and `receivedBefore` (the highest version
    /// received before the window, nil when none).
    package static func next(current: Int64, lowestMark: Int64?, receivedBefore: Int64?) -> Int64 {
        guard let receivedBefore else { return current }
        return max(current, min(lowestMark ?? receivedBefore, receivedBefore))
    }

    /// The window's first bucket and its cutoff, for a compaction at `now` with `age`.
    ///
    /// - Throws: ``SyncError/Code/invalidRequest`` for an empty space or an age below
    ///   ``minimumAge``.
    package static func window(space: String, now: Date, age: Duration) throws(SyncError) -> (cutoff: Date, firstBucket: Int64) {
        guard !space.isEmpty else { throw SyncError(.invalidRequest, "a compaction needs a space") }
        guard age >= minimumAge else {
            throw SyncError(.invalidRequest, "a compaction's age must be at least \(minimumAge), not \(age); nothing was deleted")
        }
        let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
        let cutoff = now.addingTimeInterval(-seconds)
        return (cutoff, bucket(of: cutoff))
    }
}
