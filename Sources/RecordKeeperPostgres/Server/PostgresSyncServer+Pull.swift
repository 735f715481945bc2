import RecordKeeperSync

extension PostgresSyncServer {
    /// One pull, inside its REPEATABLE READ transaction: the counter and the rows come from one
    /// snapshot. A push takes the counter lock first and stamps its rows with counter values
    /// above the one it found, so a push that committed a counter value had every earlier value
    /// committed before it; in any snapshot, every row with a version up to the counter is
    /// committed and visible, and a later commit only ever adds versions above it. Reading up
    /// to the counter, in (version, collection, key) order, therefore never passes a change
    /// that commits later, and a page cut short ends at its last row, never at the counter.
    ///
    /// A cursor behind the space's compaction horizon is refused (``SyncError/Code/behindHorizon``):
    /// the tombstones it has not seen may be gone. Returns up to `pages` consecutive pages (see
    /// ``SyncPage/assemblePages(_:limit:pages:head:cursor:horizon:cutShort:)``: one statement
    /// reads them all, less than `budget` payload bytes plus the change that crosses it, as
    /// ``SyncPage/countWithinBudget(_:budget:)`` counts them) and, when the lowest cursor they hand out (the first page's) is below the
    /// lowest one recorded for `bucket` (or none is), its mark to record.
    static func pull(
        space: String, after cursor: SyncCursor, limit: Int, pages: Int = 1, collections: Set<String>?,
        budget: Int = SyncPage.payloadBudget, bucket: Int64, on connection: isolated PostgresConnection
    ) throws -> ([SyncPage], mark: Int64?) {
        let head = try connection.execute(
            """
            SELECT s.counter, s.horizon,
                (SELECT c.lowest FROM recordkeeper_sync_cursors c WHERE c.space = s.space AND c.bucket = $2)
            FROM recordkeeper_sync_spaces s WHERE s.space = $1
            """, [.text(space), .int64(bucket)],
            operation: "pull: read the space's counter and horizon")
        let exists = head.rowCount > 0
        let counter = exists ? try head.int64(0, 0) : 0
        let horizon = exists ? try head.int64(0, 1) : 0
        let lowest = exists ? try head.optionalInt64(0, 2) : nil
        if SyncHorizon.isBehind(cursor, horizon: horizon) {
            throw SyncHorizon.behind(cursor, horizon: horizon, space: space)
        }
        // Rows strictly after the cursor. A cursor without a position covers its whole counter
        // value: (counter + 1, '', '') precedes every row of the next value, as collections and
        // keys are never empty.
        let (afterVersion, afterCollection, afterKey) =
            if let position = cursor.position {
                (cursor.counter, position.collection, position.key)
            } else {
                (cursor.counter + 1, "", "")
            }
        // `version BETWEEN $3 AND $2` repeats what the row comparison implies: without it,
        // a table whose statistics lag behind (a space filled since the last ANALYZE)
        // estimated a few dozen rows and was read by a bitmap scan of every row after the
        // cursor plus a sort, for each page (30 ms instead of 0.5 ms a page of 1,000 at
        // 100,000 records); with the bound, the ordered scan of the feed index is the plan.
        var parameters: [PostgresValue] = [
            .text(space), .int64(counter), .int64(afterVersion), .text(afterCollection),
            .text(afterKey), .int64(Int64(limit) * Int64(pages) + 1), .int64(Int64(budget)),
        ]
        if let collections { parameters.append(.binaryTextArray(collections.sorted())) }
        let rows = try connection.execute(
            collections == nil ? allCollectionsSQL : someCollectionsSQL, parameters,
            operation: "pull: read the changes", resultFormat: .binary)
        // The rows past the budget come without their payload (column 5 false): the first of
        // them only says that the read was cut for its size.
        var changes: [SyncPulledChange] = []
        changes.reserveCapacity(rows.rowCount)
        for row in 0..<rows.rowCount {
            guard try rows.bool(row, 5) else { break }
            changes.append(
                SyncPulledChange(
                    collection: try rows.string(row, 0), key: try rows.string(row, 1),
                    value: rows.isNull(row, 3) ? .tombstone : .payload(try rows.data(row, 3)),
                    version: SyncServerVersion(try rows.int64(row, 2)),
                    itemVersion: try rows.optionalInt64(row, 4).map { Int(truncatingIfNeeded: $0) }))
        }
        let result = SyncPage.assemblePages(
            changes, limit: limit, pages: pages, head: counter, cursor: cursor, horizon: horizon,
            cutShort: changes.count < rows.rowCount)
        let mark = SyncHorizon.mark(of: result[0].cursor)
        let lowers = exists && (lowest.map { mark < $0 } ?? true)
        return (result, lowers ? mark : nil)
    }

    /// Records that a cursor with `mark` was handed out in `bucket` (lowering the bucket's
    /// lowest), in its own short statement after the pull's snapshot: a compaction never moves
    /// the horizon past a cursor handed out within its age. Most pulls skip it (a device's
    /// cursors only grow, so the hour's first pull usually sets the lowest).
    static func recordMark(
        _ mark: Int64, space: String, bucket: Int64, on connection: isolated PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO recordkeeper_sync_cursors AS c (space, bucket, lowest) VALUES ($1, $2, $3)
            ON CONFLICT (space, bucket) DO UPDATE SET lowest = least(c.lowest, excluded.lowest)
            """, [.text(space), .int64(bucket), .int64(mark)], operation: "pull: record the cursor handed out")
    }

    /// The rows of a pull of every collection, through the feed index, each with whether it is
    /// within the pull's payload budget `$7` (its earlier rows hold fewer bytes; see
    /// ``SyncPage/countWithinBudget(_:budget:)``) and its payload only then. The window runs
    /// over the `$6` rows already cut, never before the `LIMIT`. `octet_length` reads a stored
    /// value's size from its header, and a payload left out is never fetched from its TOAST
    /// table: a page of large records reads about `$7` payload bytes, not `$6` records.
    static let allCollectionsSQL: StaticString = """
        SELECT collection, key, version, CASE WHEN earlier < $7 THEN payload END, item_version, earlier < $7
        FROM (
            SELECT collection, key, version, payload, item_version,
                coalesce(sum(octet_length(payload)) OVER (
                    ORDER BY version, collection, key ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS earlier
            FROM (
                SELECT collection, key, version, payload, item_version FROM recordkeeper_sync_records
                WHERE space = $1 AND version BETWEEN $3 AND $2
                    AND (version, collection, key) > ($3, $4, $5)
                ORDER BY version, collection, key
                LIMIT $6
            ) AS cut
        ) AS page
        ORDER BY version, collection, key
        """

    /// The rows of a pull of the collections in `$8`: for each, the first `$6` rows after the
    /// cursor through its collection feed index `(space, collection, version, key)` (schema
    /// version 5), merged in feed order and cut at `$6` (a sort that keeps `$6` rows), then
    /// given the payload budget `$7` as above. A collection's rows are in its index in feed
    /// order, so each probe reads only rows it may return (at most `$6` per collection named),
    /// however many changes of other collections lie between them.
    static let someCollectionsSQL: StaticString = """
        SELECT collection, key, version, CASE WHEN earlier < $7 THEN payload END, item_version, earlier < $7
        FROM (
            SELECT collection, key, version, payload, item_version,
                coalesce(sum(octet_length(payload)) OVER (
                    ORDER BY version, collection, key ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS earlier
            FROM (
                SELECT r.collection, r.key, r.version, r.payload, r.item_version
                FROM unnest($8::text[]) AS wanted(name)
                CROSS JOIN LATERAL (
                    SELECT collection, key, version, payload, item_version FROM recordkeeper_sync_records
                    WHERE space = $1 AND collection = wanted.name AND version BETWEEN $3 AND $2
                        AND (version, collection, key) > ($3, $4, $5)
                    ORDER BY version, key
                    LIMIT $6
                ) AS r
                ORDER BY r.version, r.collection, r.key
                LIMIT $6
            ) AS cut
        ) AS page
        ORDER BY version, collection, key
        """

    /// PostgreSQL's plan for the rows of a pull (`EXPLAIN`), for tests that check which index
    /// it reads.
    package static func planOfPull(
        space: String, after counter: Int64, collections: Set<String>?, on connection: PostgresConnection
    ) async throws -> String {
        var parameters: [PostgresValue] = [
            .text(space), .int64(Int64.max - 1), .int64(counter + 1), .text(""), .text(""), .int64(1001),
            .int64(Int64(SyncPage.payloadBudget)),
        ]
        if let collections { parameters.append(.binaryTextArray(collections.sorted())) }
        return try await connection.explain(collections == nil ? allCollectionsSQL : someCollectionsSQL, parameters)
    }
}
