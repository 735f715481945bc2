import Foundation
import RecordKeeper
import RecordKeeperPostgres

/// The data of the sync rows, reusable by a row that goes through the client later: the same
/// N records (collection `items`, keys `k000000`…, the bench's ~100-byte JSON payloads) as rows
/// for the raw baseline, as operations of the shapes a device pushes, and grouped into pushes.
enum SyncBenchData {
    /// The records in key order.
    static func rows(n: Int) throws -> [RawPostgres.Row] {
        let encoder = Dataset.makeEncoder()
        return try (0..<n).map { index in
            RawPostgres.Row(
                collection: benchCollection, key: Dataset.key(index),
                payload: try encoder.encode(Dataset.item(index)))
        }
    }

    /// An initial upload as the client captures it: the records in operations of at most
    /// `changesPerOperation` new records each (base nil), one device, sequences 1, 2, ….
    static func uploadOperations(
        _ rows: [RawPostgres.Row], device: String = "bench-device", changesPerOperation: Int = 1_000
    ) -> [SyncOperation] {
        stride(from: 0, to: rows.count, by: changesPerOperation).enumerated().map { number, start in
            let chunk = rows[start..<min(start + changesPerOperation, rows.count)]
            return SyncOperation(
                device: device, sequence: Int64(number + 1),
                changes: chunk.map {
                    SyncChange(collection: $0.collection, key: $0.key, value: .payload($0.payload), base: nil)
                })
        }
    }

    /// One operation per record (one local transaction per save), one device.
    static func singleRecordOperations(_ rows: [RawPostgres.Row], device: String = "bench-device") -> [SyncOperation] {
        rows.enumerated().map { number, row in
            SyncOperation(
                device: device, sequence: Int64(number + 1),
                changes: [SyncChange(collection: row.collection, key: row.key, value: .payload(row.payload), base: nil)])
        }
    }

    /// Pushes, one call each, in order; returns the outcomes of every call.
    static func pushAll(_ pushes: [[SyncOperation]], to server: any RecordSyncServer, space: String)
        async throws -> [[SyncOutcome]]
    {
        var outcomes: [[SyncOutcome]] = []
        outcomes.reserveCapacity(pushes.count)
        for operations in pushes {
            outcomes.append(try await server.push(space: space, operations: operations))
        }
        return outcomes
    }

    /// Pulls from the start to the head in pages of `limit`; returns how many changes came.
    static func pullAll(from server: any RecordSyncServer, space: String, limit: Int = 1_000) async throws -> Int {
        var read = 0
        var cursor = SyncCursor.start
        while true {
            let page = try await server.pull(space: space, after: cursor, limit: limit)
            read += page.changes.count
            cursor = page.cursor
            if !page.hasMore { return read }
        }
    }

    /// Groups operations, in order, into pushes of at most `maxChanges` changes and
    /// `maxOperations` operations (an operation larger than `maxChanges` goes alone).
    static func pushes(_ operations: [SyncOperation], maxChanges: Int = 1_000, maxOperations: Int = 1_000)
        -> [[SyncOperation]]
    {
        var pushes: [[SyncOperation]] = []
        var current: [SyncOperation] = []
        var changes = 0
        for operation in operations {
            if !current.isEmpty,
                changes + operation.changes.count > maxChanges || current.count == maxOperations
            {
                pushes.append(current)
                current = []
                changes = 0
            }
            current.append(operation)
            changes += operation.changes.count
        }
        if !current.isEmpty { pushes.append(current) }
        return pushes
    }
}

/// S1/S2: pushing and pulling N records through `PostgresSyncServer`, against raw libpq
/// storing and reading the same rows in batches of 1,000, in the same run (see
/// docs/PERFORMANCE.md). Runs only when a PostgreSQL conninfo is given (`--postgres` or
/// `RECORDKEEPER_TEST_POSTGRES`, which scripts/with-postgres.sh sets).
///
/// Every measurement starts from a fresh schema `recordkeeper_bench` (dropped and created
/// again, untimed; the bench's connections put it first in their `search_path`): the raw table
/// and the sync server's tables are created there, so each side starts empty and no repeat
/// inherits the previous one's rows. The schema is dropped at the end.
extension BenchRunner {
    static let syncSchemaStatements: [StaticString] = [
        "SET client_min_messages = warning",
        "DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE",
        "CREATE SCHEMA recordkeeper_bench",
        "SET search_path TO recordkeeper_bench",
    ]

    func runSync(conninfo: String) async throws {
        let n = options.n
        let rows = try SyncBenchData.rows(n: n)
        let upload = SyncBenchData.pushes(SyncBenchData.uploadOperations(rows))
        let single = SyncBenchData.pushes(SyncBenchData.singleRecordOperations(rows))
        let raw = try RawPostgres(conninfo: conninfo)
        log("S1/S2 sync push and pull, N=\(n): \(upload.count) upload pushes, \(single.count) pushes of 1-record operations")

        var samples: [String: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                switch implementation {
                case .raw:
                    let (push, pull) = try rawSyncBaseline(raw, rows: rows)
                    samples["raw push", default: []].append(push)
                    samples["raw pull", default: []].append(pull)
                case .recordKeeper:
                    for (variant, pushes) in [("upload", upload), ("1-record ops", single)] {
                        try freshSchema(raw)
                        let server = try await syncServer(conninfo: conninfo)
                        let space = "bench"
                        var outcomes: [[SyncOutcome]] = []
                        let push = try await measureAsync {
                            outcomes = try await SyncBenchData.pushAll(pushes, to: server, space: space)
                        }
                        let applied = outcomes.joined().filter { $0.result.appliedVersion != nil }.count
                        guard applied == pushes.joined().count else {
                            throw BenchFailure("\(variant): \(applied) operations applied, not \(pushes.joined().count)")
                        }
                        samples["rk push \(variant)", default: []].append(push)
                        if variant == "upload" {
                            var read = 0
                            let pull = try await measureAsync {
                                read = try await SyncBenchData.pullAll(from: server, space: space)
                            }
                            guard read == n else { throw BenchFailure("the sync pull read \(read) records, not \(n)") }
                            samples["rk pull", default: []].append(pull)
                        }
                    }
                case .naive:
                    continue
                }
            }
        }
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
        for variant in ["upload", "1-record ops"] {
            record("S1", variant: variant, n: n, .raw, metric: "time_s", samples: samples["raw push"] ?? [],
                   note: "one insert from unnest of binary arrays per batch of 1,000, a transaction each")
            record("S1", variant: variant, n: n, .recordKeeper, metric: "time_s",
                   samples: samples["rk push \(variant)"] ?? [],
                   note: variant == "upload"
                       ? "upload: operations of 1,000 new records, one per push"
                       : "1-record ops: one operation per record, 1,000 operations per push")
        }
        record("S2", variant: "pages of 1000", n: n, .raw, metric: "time_s", samples: samples["raw pull"] ?? [],
               note: "keyset pages of 1,000, one query each")
        record("S2", variant: "pages of 1000", n: n, .recordKeeper, metric: "time_s", samples: samples["rk pull"] ?? [])
    }

    /// The raw libpq baseline of one repeat, in a fresh schema: `rows` inserted in batches of
    /// 1,000 (one transaction each), then read back in keyset pages of 1,000. Returns both times.
    func rawSyncBaseline(_ raw: RawPostgres, rows: [RawPostgres.Row]) throws -> (push: Double, pull: Double) {
        try freshSchema(raw)
        try raw.reset()
        let push = try measure {
            for start in stride(from: 0, to: rows.count, by: 1_000) {
                try raw.insert(rows[start..<min(start + 1_000, rows.count)])
            }
        }
        var read = 0
        let pull = try measure {
            var position: (collection: String, key: String)?
            while true {
                let page = try raw.page(after: position, limit: 1_000)
                read += page.count
                guard let last = page.last, page.count == 1_000 else { break }
                position = (last.collection, last.key)
            }
        }
        guard read == rows.count else {
            throw BenchFailure("raw PostgreSQL read back \(read) rows, not \(rows.count)")
        }
        return (push, pull)
    }

    /// Drops and creates the bench schema (untimed) through the raw connection.
    func freshSchema(_ raw: RawPostgres) throws {
        for statement in Self.syncSchemaStatements {
            try raw.exec(statement, "prepare the bench schema")
        }
    }

    /// A sync server on a new connection whose `search_path` is the bench schema; connecting
    /// creates the sync tables there (untimed).
    func syncServer(conninfo: String) async throws -> PostgresSyncServer {
        let connection = try await PostgresConnection(conninfo: conninfo)
        try await connection.execute("SET search_path TO recordkeeper_bench", operation: "use the bench schema")
        return try await PostgresSyncServer(connection: connection)
    }
}
