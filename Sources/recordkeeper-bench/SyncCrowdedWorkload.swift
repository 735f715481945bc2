import Foundation
import RecordKeeper
import RecordKeeperPostgres

/// S5: the push of S1 (upload: operations of 1,000 new records, one per push) into a new
/// space of a server that already holds 600,000 rows of six other spaces, analyzed before the
/// new space exists (so PostgreSQL's statistics say it is empty), against the same push into
/// an empty server, in the same run. Issue 18: the push's record look-ups used to take the feed
/// index there and walk the whole space per record, slower batch by batch. Target ≤ 1.5×.
///
/// The baseline sits in the `raw` column of the results (it is RecordKeeper too, on an empty
/// server); each repeat starts from a fresh bench schema, the other spaces' rows written by one
/// `INSERT … SELECT … generate_series` and `ANALYZE`, untimed.
extension BenchRunner {
    /// Rows of other spaces the crowded server holds.
    static let crowdedRows = 600_000

    func runCrowdedPush(conninfo: String) async throws {
        let n = options.n
        let upload = SyncBenchData.pushes(SyncBenchData.uploadOperations(try SyncBenchData.rows(n: n)))
        let raw = try RawPostgres(conninfo: conninfo)
        log("S5 push of N=\(n) into a new space, server empty vs holding \(Self.crowdedRows) rows of other spaces")
        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) where implementation != .naive {
                try freshSchema(raw)
                let server = try await syncServer(conninfo: conninfo)
                if implementation == .recordKeeper {
                    try raw.exec(
                        """
                        INSERT INTO recordkeeper_sync_records
                            (space, collection, key, version, payload, deleted, writer_device, writer_base)
                        SELECT 'other-' || (g % 6), 'items', 'k' || lpad(g::text, 8, '0'), g,
                            convert_to(repeat('x', 100), 'UTF8'), false, 'bench-other', NULL
                        FROM generate_series(1, 600000) AS g
                        """, "fill the other spaces")
                    try raw.exec("ANALYZE recordkeeper_sync_records", "analyze the crowded server")
                }
                var outcomes: [[SyncOutcome]] = []
                let push = try await measureAsync {
                    outcomes = try await SyncBenchData.pushAll(upload, to: server, space: "new")
                }
                let applied = outcomes.joined().filter { $0.result.appliedVersion != nil }.count
                guard applied == upload.joined().count else {
                    throw BenchFailure("S5: \(applied) operations applied, not \(upload.joined().count)")
                }
                samples[implementation, default: []].append(push)
            }
        }
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
        record("S5", variant: "new space, 600,000 rows elsewhere", n: n, .raw, metric: "time_s",
               samples: samples[.raw] ?? [],
               note: "baseline: the same PostgresSyncServer push into an empty server")
        record("S5", variant: "new space, 600,000 rows elsewhere", n: n, .recordKeeper, metric: "time_s",
               samples: samples[.recordKeeper] ?? [],
               note: "upload into a new space; the other spaces analyzed before it existed")
    }
}
