import RecordKeeper

extension PostgresSyncServer {
    /// One pull, inside its REPEATABLE READ transaction: the counter and the rows come from one
    /// snapshot. A push takes the counter lock first and stamps its rows with counter values
    /// above the one it found, so a push that committed a counter value had every earlier value
    /// committed before it; in any snapshot, every row with a version up to the counter is
    /// committed and visible, and a later commit only ever adds versions above it. Reading up
    /// to the counter, in (version, collection, key) order, therefore never passes a change
    /// that commits later, and a page cut short ends at its last row, never at the counter.
    static func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?,
        on connection: isolated PostgresConnection
    ) throws -> SyncPage {
        let head = try connection.execute(
            "SELECT counter FROM recordkeeper_sync_spaces WHERE space = $1", [.text(space)],
            operation: "pull: read the space's counter")
        let counter = head.rowCount == 0 ? 0 : try head.int64(0, 0)
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
            .text(afterKey), .int64(Int64(limit) + 1),
        ]
        if let collections { parameters.append(.binaryTextArray(collections.sorted())) }
        let rows = try connection.execute(
            collections == nil ? allCollectionsSQL : someCollectionsSQL, parameters,
            operation: "pull: read the changes", resultFormat: .binary)
        var changes: [SyncPulledChange] = []
        changes.reserveCapacity(rows.rowCount)
        for row in 0..<rows.rowCount {
            changes.append(
                SyncPulledChange(
                    collection: try rows.string(row, 0), key: try rows.string(row, 1),
                    value: rows.isNull(row, 3) ? .tombstone : .payload(try rows.data(row, 3)),
                    version: SyncServerVersion(try rows.int64(row, 2)),
                    itemVersion: try rows.optionalInt64(row, 4).map { Int(truncatingIfNeeded: $0) }))
        }
        return SyncPage.assemble(changes, limit: limit, head: counter, cursor: cursor)
    }

    /// The rows of a pull of every collection, through the feed index.
    static let allCollectionsSQL: StaticString = """
        SELECT collection, key, version, payload, item_version FROM recordkeeper_sync_records
        WHERE space = $1 AND version BETWEEN $3 AND $2
            AND (version, collection, key) > ($3, $4, $5)
        ORDER BY version, collection, key
        LIMIT $6
        """

    /// The rows of a pull of the collections in `$7`: for each, the first `$6` rows after the
    /// cursor through its collection feed index `(space, collection, version, key)` (schema
    /// version 5), merged in feed order and cut at `$6`. A collection's rows are in its index
    /// in feed order, so each probe reads only rows it may return (at most `$6` per collection
    /// named), however many changes of other collections lie between them.
    static let someCollectionsSQL: StaticString = """
        SELECT r.collection, r.key, r.version, r.payload, r.item_version
        FROM unnest($7::text[]) AS wanted(name)
        CROSS JOIN LATERAL (
            SELECT collection, key, version, payload, item_version FROM recordkeeper_sync_records
            WHERE space = $1 AND collection = wanted.name AND version BETWEEN $3 AND $2
                AND (version, collection, key) > ($3, $4, $5)
            ORDER BY version, key
            LIMIT $6
        ) AS r
        ORDER BY r.version, r.collection, r.key
        LIMIT $6
        """

    /// PostgreSQL's plan for the rows of a pull (`EXPLAIN`), for tests that check which index
    /// it reads.
    package static func planOfPull(
        space: String, after counter: Int64, collections: Set<String>?, on connection: PostgresConnection
    ) async throws -> String {
        var parameters: [PostgresValue] = [
            .text(space), .int64(Int64.max - 1), .int64(counter + 1), .text(""), .text(""), .int64(1001),
        ]
        if let collections { parameters.append(.binaryTextArray(collections.sorted())) }
        return try await connection.explain(collections == nil ? allCollectionsSQL : someCollectionsSQL, parameters)
    }
}
