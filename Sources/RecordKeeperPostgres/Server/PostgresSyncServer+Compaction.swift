import Foundation
public import RecordKeeperSync

extension PostgresSyncServer {
    /// How many rows one deletion batch of a compaction removes unless told otherwise.
    public static let defaultCompactionBatch = 1000

    /// Compacts `space` (see ``RecordKeeper/SyncCompactingServer``): moves its horizon, then
    /// deletes tombstones at or below it and operation outcomes received before `now - age`,
    /// in batches of ``defaultCompactionBatch``.
    ///
    /// ```swift
    /// let done = try await server.compact(space: "alice", olderThan: .seconds(30 * 86_400))
    /// ```
    ///
    /// - Throws: ``RecordKeeper/SyncError`` (``RecordKeeper/SyncError/Code/invalidRequest`` for an
    ///   empty space or an age under an hour, nothing deleted; ``RecordKeeper/SyncError/Code/unreachable``,
    ///   ``RecordKeeper/SyncError/Code/serverFailure``: the batches committed before stay deleted).
    public func compact(space: String, olderThan age: Duration) async throws -> SyncCompaction {
        try await compact(space: space, olderThan: age, batch: Self.defaultCompactionBatch)
    }

    /// Compacts `space` in deletion batches of `batch` rows.
    ///
    /// It runs beside live traffic: the horizon moves in one short transaction (it waits only
    /// for a push of the space in flight, on the space's counter row), and every batch is a
    /// transaction of its own deleting at most `batch` rows, each bounded by ``timeout``.
    /// Pushes and pulls of the space go on between and during batches (a push waits only when
    /// it writes a record whose tombstone the running batch is deleting).
    ///
    /// - Throws: as ``compact(space:olderThan:)``; also ``RecordKeeper/SyncError/Code/invalidRequest``
    ///   for a batch below 1.
    public func compact(space: String, olderThan age: Duration, batch: Int) async throws -> SyncCompaction {
        guard batch >= 1 else { throw SyncError(.invalidRequest, "a compaction batch must be at least 1 row, not \(batch)") }
        let (cutoff, firstBucket) = try SyncHorizon.window(space: space, now: now(), age: age)
        let before = Self.microseconds(cutoff)
        do {
            let horizon = try await step { connection in
                try connection.transaction(.readCommitted, operation: "compact: move the horizon") { connection in
                    try Self.moveHorizon(space: space, before: before, firstBucket: firstBucket, on: connection)
                }
            }
            guard let horizon else { return SyncCompaction(space: space, horizon: 0, deletedTombstones: 0, deletedOperations: 0) }
            let hook = hooks.inCompactionBatch
            var tombstones = 0
            var after = (version: Int64(0), collection: "", key: "")
            while true {
                let (deleted, last) = try await step { [after] connection in
                    try connection.transaction(.readCommitted, operation: "compact: delete tombstones") { connection in
                        let done = try Self.deleteTombstones(
                            space: space, horizon: horizon, after: after, batch: batch, on: connection)
                        if done.last != nil { try hook?(space) }
                        return done
                    }
                }
                tombstones += deleted
                guard let last else { break }
                after = last
            }
            var operations = 0
            var afterOperation: (receivedAt: String, id: UUID)?
            while true {
                let (deleted, last) = try await step { [afterOperation] connection in
                    try connection.transaction(.readCommitted, operation: "compact: delete operation outcomes") {
                        connection in
                        let done = try Self.deleteOperations(
                            space: space, horizon: horizon, before: before, after: afterOperation, batch: batch,
                            on: connection)
                        if done.last != nil { try hook?(space) }
                        return done
                    }
                }
                operations += deleted
                guard let last else { break }
                afterOperation = last
            }
            _ = try await step { connection in
                try connection.execute(
                    "DELETE FROM recordkeeper_sync_cursors WHERE space = $1 AND bucket < $2",
                    [.text(space), .int64(firstBucket)], operation: "compact: forget cursors handed out before the window")
            }
            return SyncCompaction(
                space: space, horizon: horizon, deletedTombstones: tombstones, deletedOperations: operations)
        } catch {
            throw Self.failure(error, "compact space \(space)")
        }
    }

    /// Compacts every space the server holds, one after the other (see
    /// ``compact(space:olderThan:batch:)``). A space whose compaction fails does not stop the
    /// others: every space is tried, and the failures are thrown together at the end.
    ///
    /// - Throws: ``SyncCompactionIncomplete`` with what was compacted and each space that
    ///   failed (a list of spaces that could not be read is one failure naming them);
    ///   ``RecordKeeper/SyncError/Code/invalidRequest`` for a batch or an age no space could be
    ///   compacted with, nothing tried; `CancellationError`.
    public func compactAll(olderThan age: Duration, batch: Int = defaultCompactionBatch) async throws -> [SyncCompaction] {
        // Arguments that fail every space fail once, before anything is tried.
        guard batch >= 1 else { throw SyncError(.invalidRequest, "a compaction batch must be at least 1 row, not \(batch)") }
        _ = try SyncHorizon.window(space: "-", now: now(), age: age)
        var done: [SyncCompaction] = []
        var failures: [SyncCompactionIncomplete.Failure] = []
        var after = ""
        while true {
            let spaces: [String]
            do {
                spaces = try await self.spaces(after: after, limit: 100)
            } catch let error as SyncError {
                // Without the list, the spaces after `after` cannot be named: one failure for them.
                let which = after.isEmpty ? "(every space)" : "(the spaces after '\(after)')"
                failures.append(.init(space: which, error: error))
                break
            }
            guard let last = spaces.last else { break }
            for space in spaces {
                do {
                    done.append(try await compact(space: space, olderThan: age, batch: batch))
                } catch let error as SyncError {
                    failures.append(.init(space: space, error: error))
                } catch {
                    // Cancellation (or anything else compact does not turn into a SyncError)
                    // stops them all.
                    throw error
                }
            }
            after = last
        }
        guard failures.isEmpty else { throw SyncCompactionIncomplete(compacted: done, failures: failures) }
        return done
    }

    /// Runs one step of a compaction on a free connection, within ``timeout``.
    private func step<T: Sendable>(_ body: @escaping @Sendable (isolated PostgresConnection) throws -> T) async throws -> T {
        let timeout = timeout
        return try await withConnection { connection in
            try await connection.withTimeout(timeout) { connection in try body(connection) }
        }
    }

    /// Moves the space's horizon as far as the age and the cursors handed out allow (never
    /// back), and returns it; nil for a space the server does not hold.
    private static func moveHorizon(
        space: String, before: Int64, firstBucket: Int64, on connection: isolated PostgresConnection
    ) throws -> Int64? {
        let found = try connection.execute(
            """
            SELECT s.horizon,
                (SELECT min(c.lowest) FROM recordkeeper_sync_cursors c WHERE c.space = s.space AND c.bucket >= $2),
                (SELECT max(o.version) FROM recordkeeper_sync_operations o
                 WHERE o.space = s.space AND o.received_at < timestamptz 'epoch' + $3::bigint * interval '1 microsecond')
            FROM recordkeeper_sync_spaces s WHERE s.space = $1
            """, [.text(space), .int64(firstBucket), .int64(before)], operation: "compact: read the horizon's bounds")
        guard found.rowCount > 0 else { return nil }
        let current = try found.int64(0, 0)
        let horizon = SyncHorizon.next(
            current: current, lowestMark: try found.optionalInt64(0, 1), receivedBefore: try found.optionalInt64(0, 2))
        if horizon > current {
            // The counter row's lock: waits for a push of the space in flight, briefly.
            try connection.execute(
                "UPDATE recordkeeper_sync_spaces SET horizon = $2 WHERE space = $1 AND horizon < $2",
                [.text(space), .int64(horizon)], operation: "compact: move the horizon")
        }
        return horizon
    }

    /// Deletes up to `batch` tombstones at or below `horizon` after `after` in feed order;
    /// returns how many, and the last one looked at (nil: none left).
    ///
    /// A push writing one of these records meanwhile is not undone: the DELETE checks again that
    /// the row is still a tombstone at or below the horizon when it gets the row.
    private static func deleteTombstones(
        space: String, horizon: Int64, after: (version: Int64, collection: String, key: String), batch: Int,
        on connection: isolated PostgresConnection
    ) throws -> (Int, last: (version: Int64, collection: String, key: String)?) {
        let rows = try connection.execute(
            """
            WITH doomed AS (
                SELECT collection, key, version FROM recordkeeper_sync_records
                WHERE space = $1 AND deleted AND version BETWEEN $3 AND $2
                    AND (version, collection, key) > ($3, $4, $5)
                ORDER BY version, collection, key
                LIMIT $6
            ), gone AS (
                DELETE FROM recordkeeper_sync_records r USING doomed d
                WHERE r.space = $1 AND r.collection = d.collection AND r.key = d.key
                    AND r.deleted AND r.version <= $2
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM gone), d.version, d.collection, d.key
            FROM (SELECT * FROM doomed ORDER BY version DESC, collection DESC, key DESC LIMIT 1) d
            """,
            [.text(space), .int64(horizon), .int64(after.version), .text(after.collection), .text(after.key), .int64(Int64(batch))],
            operation: "compact: delete tombstones")
        guard rows.rowCount > 0 else { return (0, nil) }
        return (Int(try rows.int64(0, 0)), (try rows.int64(0, 1), try rows.string(0, 2), try rows.string(0, 3)))
    }

    /// Deletes up to `batch` operation outcomes received before `before` (applied ones only at
    /// or below `horizon`) after `after` in (received, id) order, and raises their devices'
    /// compacted sequence in the same transaction, so a re-delivery is recognised as soon as its
    /// outcome is gone; returns how many, and the last one looked at (nil: none left).
    private static func deleteOperations(
        space: String, horizon: Int64, before: Int64, after: (receivedAt: String, id: UUID)?, batch: Int,
        on connection: isolated PostgresConnection
    ) throws -> (Int, last: (receivedAt: String, id: UUID)?) {
        let rows = try connection.execute(
            """
            WITH doomed AS (
                SELECT operation_id, received_at FROM recordkeeper_sync_operations
                WHERE space = $1 AND received_at < timestamptz 'epoch' + $3::bigint * interval '1 microsecond'
                    AND ($4::timestamptz IS NULL OR (received_at, operation_id) > ($4::timestamptz, $5::uuid))
                    AND (version IS NULL OR version <= $2)
                ORDER BY received_at, operation_id
                LIMIT $6
            ), gone AS (
                DELETE FROM recordkeeper_sync_operations o USING doomed d
                WHERE o.space = $1 AND o.operation_id = d.operation_id
                RETURNING o.device, o.sequence
            ), last AS (
                SELECT received_at::text AS received_at, operation_id::text AS operation_id FROM doomed
                ORDER BY received_at DESC, operation_id DESC LIMIT 1
            )
            SELECT 0, device, max(sequence), count(*), NULL, NULL FROM gone GROUP BY device
            UNION ALL
            SELECT 1, NULL, NULL, NULL, received_at, operation_id FROM last
            """,
            [
                .text(space), .int64(horizon), .int64(before), after.map { .text($0.receivedAt) } ?? .null,
                after.map { .text($0.id.uuidString) } ?? .null, .int64(Int64(batch)),
            ], operation: "compact: delete operation outcomes")
        var devices: [String?] = []
        var sequences: [Int64?] = []
        var deleted = 0
        var last: (receivedAt: String, id: UUID)?
        for row in 0..<rows.rowCount {
            if try rows.int64(row, 0) == 0 {
                devices.append(try rows.string(row, 1))
                sequences.append(try rows.int64(row, 2))
                deleted += Int(try rows.int64(row, 3))
            } else {
                let text = try rows.string(row, 5)
                guard let id = UUID(uuidString: text) else {
                    throw PostgresError(
                        .unexpectedResult, operation: "compact: delete operation outcomes", message: "'\(text)' is not a UUID")
                }
                last = (try rows.string(row, 4), id)
            }
        }
        if !devices.isEmpty {
            // Device rows locked in one order, so a batch and a push of several devices
            // cannot deadlock.
            try connection.execute(
                """
                SELECT 1 FROM recordkeeper_sync_devices WHERE space = $1 AND device = ANY($2::text[])
                ORDER BY device FOR UPDATE
                """, [.text(space), .binaryTextArray(devices)], operation: "compact: lock the devices")
            try connection.execute(
                """
                UPDATE recordkeeper_sync_devices d SET compacted_sequence = w.sequence
                FROM unnest($2::text[], $3::bigint[]) AS w(device, sequence)
                WHERE d.space = $1 AND d.device = w.device AND d.compacted_sequence < w.sequence
                """, [.text(space), .binaryTextArray(devices), .int64Array(sequences)],
                operation: "compact: raise the devices' compacted sequences")
        }
        return (deleted, last)
    }
}

/// A compaction of every space that did not compact some of them: the others were compacted
/// (``compacted``), each failure is named (``failures``). Running it again retries them.
public struct SyncCompactionIncomplete: Error, Sendable, CustomStringConvertible {
    /// One space that failed, and why.
    public struct Failure: Sendable {
        /// The space.
        public var space: String
        /// Why it failed.
        public var error: SyncError
    }

    /// The spaces compacted.
    public var compacted: [SyncCompaction]
    /// The spaces that failed, in the order they were tried.
    public var failures: [Failure]

    public var description: String {
        let shown = failures.prefix(5).map { "\($0.space): \($0.error.message)" }.joined(separator: "; ")
        let more = failures.count > 5 ? " (and \(failures.count - 5) more)" : ""
        return "\(failures.count) space(s) could not be compacted (\(compacted.count) were): \(shown)\(more)"
    }
}
