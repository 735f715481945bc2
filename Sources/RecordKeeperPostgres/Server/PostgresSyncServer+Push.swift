import Foundation
package import RecordKeeperSync

extension PostgresSyncServer {
    /// One push, inside its READ COMMITTED transaction. The first statement locks the space's
    /// counter row, so the pushes of one space run one after the other and take counter values
    /// in commit order; every later statement (a fresh snapshot each, under READ COMMITTED) sees
    /// what earlier pushes committed. Then one statement reads what the push names, the
    /// planner decides in Swift, and one statement writes: BEGIN, lock, read, write, COMMIT,
    /// whatever the number of operations and records (the arrays travel as parameters, in
    /// PostgreSQL's binary array format, and `unnest` turns them into rows).
    static func push(
        space: String, operations: [SyncOperation], on connection: isolated PostgresConnection,
        hooks: Hooks, now: @Sendable () -> Date, notifies: Bool
    ) throws -> [SyncOutcome] {
        let head = try connection.execute(
            """
            INSERT INTO recordkeeper_sync_spaces AS s (space) VALUES ($1)
            ON CONFLICT (space) DO UPDATE SET counter = s.counter
            RETURNING counter, horizon
            """, [.text(space)], operation: "push: lock the space's counter")
        let counter = try head.int64(0, 0)
        let horizon = try head.int64(0, 1)
        try hooks.afterCounterLock?(space)
        // Read under the counter lock: the pushes of a space are stamped in counter order, so
        // a version's time is never before an earlier version's (compaction relies on it).
        let receivedAt = now()

        var state = try readState(space, counter: counter, operations, on: connection)
        state.horizon = horizon

        let plan = try SyncPushPlanner.plan(operations, state: state, space: space)
        // Only re-deliveries and out-of-order operations: nothing to write.
        if !plan.newOperations.isEmpty {
            try write(space, plan: plan, receivedAt: receivedAt, on: connection)
        }
        if notifies && plan.counter != counter {
            // Delivered at commit to every session listening (PostgresWakeSession), never
            // before: a woken pull sees the push.
            let payload = space.utf8.count <= PostgresWakeSession.longestPayload ? space : ""
            try connection.execute(
                "SELECT pg_notify('recordkeeper_sync', $1)", [.text(payload)], operation: "push: notify live pulls")
        }
        try hooks.beforeCommit?(space)
        return plan.outcomes
    }

    /// Everything the planner needs, in one statement after the counter lock: the outcomes
    /// recorded for the push's operation ids, its devices' last sequences, and the current
    /// state of the records its changes name, as rows of one shape told apart by the first
    /// column (0 outcome, 1 device, 2 record).
    ///
    /// Operations and records are looked up one primary-key probe per pushed id, whatever the
    /// statistics say (`CROSS JOIN LATERAL … LIMIT 1`, which the planner cannot flatten into a
    /// join). Set-based forms were planned from the statistics, and a space filled since the
    /// last ANALYZE turned them into scans of the whole space: a plain join with the unnested
    /// keys became a hash join (100 ms instead of 3 ms for 1,000 keys in a space of 100,000
    /// records), `key = ANY($keys)` a bitmap scan of the collection (600 ms).
    ///
    /// A record's probe is a row comparison in the primary key's column order, `(space,
    /// collection, key) >= (…)`, ordered by those columns, `LIMIT 1`, then checked for equality:
    /// only the primary key can serve it as an index condition. With plain equalities the feed
    /// index `(space, version, collection, key)` served them too, and for a new space (no
    /// statistics: estimated empty) PostgreSQL chose it, walking the whole space for every
    /// probe: a push into a new space on a server holding other spaces slowed down batch by
    /// batch (1.3 s instead of 15 ms for 1,000 probes into a space of 20,000 records).
    private static func readState(
        _ space: String, counter: Int64, _ operations: [SyncOperation],
        on connection: isolated PostgresConnection
    ) throws -> SyncPushState {
        let result = try connection.execute(
            readStateSQL, readStateParameters(space, operations),
            operation: "push: read the operations, devices and records the push names", resultFormat: .binary)

        var state = SyncPushState(counter: counter)
        state.records.reserveCapacity(result.rowCount)
        var decoder: JSONDecoder?
        for row in 0..<result.rowCount {
            switch try result.int64(row, 0) {
            case 0:
                let id = try result.uuid(row, 1)
                let device = try result.string(row, 2)
                let sequence = try result.int64(row, 6)
                // Schema 2 stores no JSON for an applied operation: its version says it all.
                guard let json = try result.optionalString(row, 5) else {
                    state.recorded[id] = SyncOutcome(
                        operationID: id, device: device, sequence: sequence,
                        result: .applied(SyncServerVersion(try result.int64(row, 3))))
                    continue
                }
                let decoding = decoder ?? JSONDecoder()
                decoder = decoding
                state.recorded[id] = try OutcomeJSON.decode(json, id: id, device: device, sequence: sequence, with: decoding)
            case 1:
                state.devices[try result.string(row, 1)] = SyncDeviceState(
                    lastSequence: try result.int64(row, 3),
                    lastOperation: try result.optionalString(row, 2).flatMap { UUID(uuidString: $0) },
                    compactedSequence: try result.int64(row, 6))
            default:
                let id = SyncRecordKey(collection: try result.string(row, 1), key: try result.string(row, 2))
                state.records[id] = SyncStoredRecord(
                    value: result.isNull(row, 4) ? .tombstone : .payload(try result.data(row, 4)),
                    version: SyncServerVersion(try result.int64(row, 3)),
                    writerDevice: try result.string(row, 5),
                    writerBase: try result.optionalInt64(row, 6).map(SyncServerVersion.init),
                    itemVersion: try result.optionalInt64(row, 7).map { Int(truncatingIfNeeded: $0) })
            }
        }
        return state
    }

    /// The read of a push (see ``readState(_:counter:_:on:)``): outcomes (kind 0), devices (1)
    /// and records (2) as rows of one shape.
    static let readStateSQL: StaticString = """
        SELECT 0, o.operation_id::text, o.device, o.version, NULL::bytea, o.outcome::text, o.sequence, NULL::bigint
        FROM unnest($2::uuid[]) AS w(id)
        CROSS JOIN LATERAL (
            SELECT operation_id, device, sequence, version, outcome FROM recordkeeper_sync_operations
            WHERE space = $1 AND operation_id = w.id
            LIMIT 1
        ) o
        UNION ALL
        SELECT 1, d.device, d.last_operation::text, d.last_sequence, NULL, NULL, d.compacted_sequence, NULL
        FROM recordkeeper_sync_devices d
        WHERE d.space = $1 AND d.device = ANY($3::text[])
        UNION ALL
        SELECT 2, r.collection, r.key, r.version, r.payload, r.writer_device, r.writer_base, r.item_version
        FROM unnest($4::text[], $5::text[]) AS w(collection, key)
        CROSS JOIN LATERAL (
            SELECT * FROM recordkeeper_sync_records
            WHERE (space, collection, key) >= ($1, w.collection, w.key)
            ORDER BY space, collection, key
            LIMIT 1
        ) r
        WHERE r.space = $1 AND r.collection = w.collection AND r.key = w.key
        """

    /// The parameters of ``readStateSQL`` for `operations` of `space`.
    static func readStateParameters(_ space: String, _ operations: [SyncOperation]) -> [PostgresValue] {
        let count = operations.reduce(0) { $0 + $1.changes.count }
        var collections: [String?] = []
        var keys: [String?] = []
        collections.reserveCapacity(count)
        keys.reserveCapacity(count)
        // Every change's record, repeats included (deduplicating would hash every key once
        // more; a repeated probe costs the server less).
        for operation in operations {
            for change in operation.changes {
                collections.append(change.collection)
                keys.append(change.key)
            }
        }
        var devices: [String?] = []
        var seenDevices = Set<String>()
        for operation in operations where seenDevices.insert(operation.device).inserted {
            devices.append(operation.device)
        }
        return [
            .text(space), .uuidArray(operations.map(\.id)), .binaryTextArray(devices),
            .binaryTextArray(collections), .binaryTextArray(keys),
        ]
    }

    /// PostgreSQL's plan for the read of a push of `operations` (`EXPLAIN`), for tests that
    /// check which index its look-ups use.
    package static func planOfRead(
        space: String, operations: [SyncOperation], on connection: PostgresConnection
    ) async throws -> String {
        try await connection.explain(readStateSQL, readStateParameters(space, operations))
    }

    /// Every write of a push in one statement, as data-modifying CTEs over the arrays of the
    /// plan (each sub-statement runs to completion; they touch different rows): the records
    /// the push creates (a plain INSERT: the counter lock keeps every other push of the space
    /// out, so a record the reads did not find cannot appear meanwhile; cheaper than an upsert's
    /// speculative insertion), the records it changes (an upsert), the operations received with
    /// their outcomes (NULL for an applied one: its version is the outcome), the devices' last
    /// sequences, and the counter. Records go in the order
    /// the push first wrote them.
    private static func write(
        _ space: String, plan: SyncPushPlan, receivedAt: Date, on connection: isolated PostgresConnection
    ) throws {
        var created = RecordArrays(capacity: plan.writes.count)
        var changed = RecordArrays(capacity: 0)
        for write in plan.writes {
            if write.existed {
                changed.append(write)
            } else {
                created.append(write)
            }
        }
        var ids: [UUID] = [], devices: [String?] = [], sequences: [Int64?] = []
        var versions: [Int64?] = [], outcomes: [String?] = []
        for operation in plan.newOperations {
            ids.append(operation.id)
            devices.append(operation.device)
            sequences.append(operation.sequence)
            let applied = operation.outcome.result.appliedVersion
            versions.append(applied?.rawValue)
            // An applied outcome is its version (schema 2); only conflicts are stored as JSON.
            outcomes.append(try applied == nil ? OutcomeJSON.encode(operation.outcome) : nil)
        }
        var deviceNames: [String?] = [], deviceSequences: [Int64?] = [], deviceOperations: [UUID] = []
        // In byte order, the order a compaction batch locks device rows in (the column is
        // COLLATE "C"): a push of several devices and a batch then never wait on each other
        // in opposite orders (a deadlock PostgreSQL would end by failing one of them).
        for (device, last) in plan.devices.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            deviceNames.append(device)
            deviceSequences.append(last.lastSequence)
            // Every device the plan changed had an operation recorded now: never nil.
            deviceOperations.append(last.lastOperation ?? UUID())
        }
        try connection.execute(
            """
            WITH created AS (
                INSERT INTO recordkeeper_sync_records
                    (space, collection, key, version, payload, deleted, writer_device, writer_base, item_version)
                SELECT $1, w.collection, w.key, w.version, w.payload, w.payload IS NULL,
                    w.writer_device, w.writer_base, w.item_version
                FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bytea[], $6::text[], $7::bigint[], $8::bigint[])
                    AS w(collection, key, version, payload, writer_device, writer_base, item_version)
            ), changed AS (
                INSERT INTO recordkeeper_sync_records AS r
                    (space, collection, key, version, payload, deleted, writer_device, writer_base, item_version)
                SELECT $1, w.collection, w.key, w.version, w.payload, w.payload IS NULL,
                    w.writer_device, w.writer_base, w.item_version
                FROM unnest($9::text[], $10::text[], $11::bigint[], $12::bytea[], $13::text[], $14::bigint[], $15::bigint[])
                    AS w(collection, key, version, payload, writer_device, writer_base, item_version)
                ON CONFLICT (space, collection, key) DO UPDATE SET
                    version = excluded.version, payload = excluded.payload,
                    deleted = excluded.deleted, writer_device = excluded.writer_device,
                    writer_base = excluded.writer_base, item_version = excluded.item_version
            ), operations AS (
                INSERT INTO recordkeeper_sync_operations
                    (space, operation_id, device, sequence, version, outcome, received_at)
                SELECT $1, w.id, w.device, w.sequence, w.version, w.outcome,
                    timestamptz 'epoch' + $25::bigint * interval '1 microsecond'
                FROM unnest($16::uuid[], $17::text[], $18::bigint[], $19::bigint[], $20::jsonb[])
                    AS w(id, device, sequence, version, outcome)
            ), devices AS (
                INSERT INTO recordkeeper_sync_devices AS d (space, device, last_sequence, last_operation)
                SELECT $1, w.device, w.last_sequence, w.last_operation
                FROM unnest($21::text[], $22::bigint[], $23::uuid[]) AS w(device, last_sequence, last_operation)
                ON CONFLICT (space, device) DO UPDATE SET
                    last_sequence = excluded.last_sequence, last_operation = excluded.last_operation
            )
            UPDATE recordkeeper_sync_spaces SET counter = $24 WHERE space = $1 AND counter <> $24
            """,
            [.text(space)] + created.parameters + changed.parameters + [
                .uuidArray(ids), .binaryTextArray(devices), .int64Array(sequences),
                .int64Array(versions), .textArray(outcomes),
                .binaryTextArray(deviceNames), .int64Array(deviceSequences), .uuidArray(deviceOperations),
                .int64(plan.counter), .int64(PostgresSyncServer.microseconds(receivedAt)),
            ], operation: "push: write the records, operations, sequences and counter")
    }
}

/// The columns of records to write, as the array parameters of one `unnest`.
private struct RecordArrays {
    var collections: [String?] = [], keys: [String?] = [], versions: [Int64?] = []
    var payloads: [Data?] = [], devices: [String?] = [], bases: [Int64?] = [], itemVersions: [Int64?] = []

    init(capacity: Int) {
        itemVersions.reserveCapacity(capacity)
        collections.reserveCapacity(capacity)
        keys.reserveCapacity(capacity)
        versions.reserveCapacity(capacity)
        payloads.reserveCapacity(capacity)
        devices.reserveCapacity(capacity)
        bases.reserveCapacity(capacity)
    }

    mutating func append(_ write: SyncRecordWrite) {
        collections.append(write.id.collection)
        keys.append(write.id.key)
        versions.append(write.record.version.rawValue)
        payloads.append(write.record.value.payload)
        devices.append(write.record.writerDevice)
        bases.append(write.record.writerBase?.rawValue)
        itemVersions.append(write.record.itemVersion.map(Int64.init))
    }

    var parameters: [PostgresValue] {
        [
            .binaryTextArray(collections), .binaryTextArray(keys), .int64Array(versions),
            .byteaArray(payloads), .binaryTextArray(devices), .int64Array(bases), .int64Array(itemVersions),
        ]
    }
}

/// The stored JSON form of an outcome (the `outcome` column): `JSONEncoder` with sorted keys
/// of its id, result and redelivery flag (docs/SYNC.md); the device and sequence it belongs to
/// are the row's columns. Written directly for an applied outcome (schema 1 stored one per
/// applied operation, and JSONEncoder took a fifth of a push's time; since schema 2 only
/// conflicts are stored).
package enum OutcomeJSON {
    /// The stored fields, in their stored form.
    private struct Stored: Codable {
        var operationID: UUID
        var result: SyncResult
        var isRedelivery: Bool
    }

    package static func encode(_ outcome: SyncOutcome) throws(PostgresError) -> String {
        if case .applied(let version) = outcome.result {
            return #"{"isRedelivery":"# + (outcome.isRedelivery ? "true" : "false")
                + #","operationID":""# + outcome.operationID.uuidString
                + #"","result":{"applied":{"_0":"# + String(version.rawValue) + "}}}"
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            let stored = Stored(operationID: outcome.operationID, result: outcome.result, isRedelivery: outcome.isRedelivery)
            return String(decoding: try encoder.encode(stored), as: UTF8.self)
        } catch {
            throw PostgresError(
                .invalidArgument, operation: "push: encode the outcome of \(outcome.operationID)",
                message: "\(error)")
        }
    }

    /// The outcome stored as `json` for operation `id` of `device` and `sequence` (the row's
    /// columns).
    static func decode(
        _ json: String, id: UUID, device: String, sequence: Int64, with decoder: JSONDecoder = JSONDecoder()
    ) throws(PostgresError) -> SyncOutcome {
        let stored: Stored
        do {
            stored = try decoder.decode(Stored.self, from: Data(json.utf8))
        } catch {
            throw PostgresError(
                .unexpectedResult, operation: "push: read the outcome of operation \(id)",
                message: "the stored outcome is not valid: \(error)")
        }
        return SyncOutcome(
            operationID: id, device: device, sequence: sequence, result: stored.result,
            isRedelivery: stored.isRedelivery)
    }
}
