import Foundation
import RecordKeeper
import RecordKeeperPostgres

/// S8: a device syncing one collection of a space pulls it from the start, when that
/// collection holds 10% of the space's N changes: by collection (`collections: ["synced"]`,
/// through the collection feed index of schema version 5) against the pull of every collection
/// that devices made before (every change comes down and the device drops 90% of them), both
/// through `PostgresSyncServer` in pages of 1,000, in the same run and the same space.
///
/// A second pair of rows prices the index: the S1 upload with it against the same upload with
/// it dropped.
///
/// The baseline sits in the `raw` column (it is RecordKeeper too: the unfiltered pull). The
/// space is written once per run, untimed, by one `INSERT … SELECT … generate_series` (every
/// tenth change in "synced", the others in "other", ~100-byte payloads) and `ANALYZE`.
extension BenchRunner {
    func runFilteredPull(conninfo: String) async throws {
        let n = options.n
        let raw = try RawPostgres(conninfo: conninfo)
        log("S8 pull of one collection holding 10% of N=\(n) changes: by collection vs every collection")
        try freshSchema(raw)
        let server = try await syncServer(conninfo: conninfo)
        let fill = try await PostgresConnection(conninfo: conninfo)
        try await fill.execute("SET search_path TO recordkeeper_bench", operation: "use the bench schema")
        try await fill.execute(
            """
            INSERT INTO recordkeeper_sync_records
                (space, collection, key, version, payload, deleted, writer_device, writer_base)
            SELECT 'bench', CASE WHEN g % 10 = 0 THEN 'synced' ELSE 'other' END, 'k' || lpad(g::text, 8, '0'), g,
                convert_to(repeat('x', 100), 'UTF8'), false, 'bench-device', NULL
            FROM generate_series(1, $1::bigint) AS g
            """, [.int64(Int64(n))], operation: "fill the space")
        try await fill.execute(
            "INSERT INTO recordkeeper_sync_spaces (space, counter) VALUES ('bench', $1)", [.int64(Int64(n))],
            operation: "set the counter")
        try raw.exec("ANALYZE recordkeeper_sync_records", "analyze the space")
        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) where implementation != .naive {
                let filter: Set<String>? = implementation == .recordKeeper ? ["synced"] : nil
                var synced = 0
                let time = try await measureAsync {
                    var cursor = SyncCursor.start
                    while true {
                        let page = try await server.pull(space: "bench", after: cursor, limit: 1_000, collections: filter)
                        synced += page.changes.lazy.filter { $0.collection == "synced" }.count
                        cursor = page.cursor
                        if !page.hasMore { break }
                    }
                }
                guard synced == n / 10 else { throw BenchFailure("S8: \(synced) changes of the collection, not \(n / 10)") }
                samples[implementation, default: []].append(time)
            }
        }
        // What the index costs a push: the upload of S1 into a fresh schema with the index and
        // without it (dropped, untimed), alternating.
        let upload = SyncBenchData.pushes(SyncBenchData.uploadOperations(try SyncBenchData.rows(n: n)))
        var pushes: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) where implementation != .naive {
                try freshSchema(raw)
                let server = try await syncServer(conninfo: conninfo)
                if implementation == .raw {
                    try raw.exec("DROP INDEX recordkeeper_sync_records_collection_feed", "drop the collection index")
                }
                var outcomes: [[SyncOutcome]] = []
                let time = try await measureAsync {
                    outcomes = try await SyncBenchData.pushAll(upload, to: server, space: "bench")
                }
                guard outcomes.joined().allSatisfy({ $0.result.appliedVersion != nil }) else {
                    throw BenchFailure("S8 push: an operation was not applied")
                }
                pushes[implementation, default: []].append(time)
            }
        }
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
        record("S8", variant: "push upload, the index's cost", n: n, .raw, metric: "time_s",
               samples: pushes[.raw] ?? [], note: "baseline: the S1 upload without the collection feed index")
        record("S8", variant: "push upload, the index's cost", n: n, .recordKeeper, metric: "time_s",
               samples: pushes[.recordKeeper] ?? [], note: "the S1 upload with it (server schema 5)")
        record("S8", variant: "10% of the space in the collection", n: n, .raw, metric: "time_s",
               samples: samples[.raw] ?? [],
               note: "baseline: the pull of every collection (what devices pulled before), pages of 1,000")
        record("S8", variant: "10% of the space in the collection", n: n, .recordKeeper, metric: "time_s",
               samples: samples[.recordKeeper] ?? [],
               note: "the pull of the one collection, pages of 1,000")
    }
}
