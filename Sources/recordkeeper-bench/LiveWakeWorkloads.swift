import Foundation
import RecordKeeper
import RecordKeeperPostgres

/// S9: the two ways a `PostgresSyncServer` hears of pushes committed by another process, in
/// the same run (docs/SYNC.md "Live pulls"):
/// - push throughput of many concurrent one-record pushers over many spaces, with `NOTIFY` in
///   every push transaction (`LiveWake.listen`) against without (`LiveWake.poll`): PostgreSQL
///   serialises the commits of notifying transactions on one database-wide lock;
/// - wake latency: a pull held on server instance X, a push through instance Y on the same
///   database, from the push's start to the page received by the held pull, p50 and p99.
///
/// `raw` in these rows is `LiveWake.poll(every: 5 ms)`; `recordkeeper` is `LiveWake.listen`.
extension BenchRunner {
    static let wakePushers = 32
    static let wakePushesEach = 150
    static let wakeSamples = 200

    func runLiveWake(conninfo: String) async throws {
        let raw = try RawPostgres(conninfo: conninfo)
        let schemaConninfo = Self.benchSchemaConninfo(conninfo)
        let modes: [(Implementation, PostgresSyncServer.LiveWake)] = [(.raw, .poll(every: .milliseconds(5))), (.recordKeeper, .listen)]
        log("S9 live wake: \(Self.wakePushers) pushers × \(Self.wakePushesEach) one-record pushes over "
            + "\(Self.wakePushers) spaces (8 connections), then \(Self.wakeSamples) wakes X → Y, poll(5 ms) vs listen")
        var throughput: [Implementation: [Double]] = [:]
        var p50: [Implementation: [Double]] = [:]
        var p99: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for (implementation, wake) in repeatIndex % 2 == 0 ? modes : modes.reversed() {
                try freshSchema(raw)
                let pushing = try await PostgresSyncServer.connect(schemaConninfo, connections: 8, liveWake: wake)
                let total = Self.wakePushers * Self.wakePushesEach
                let seconds = try await measureAsync {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for pusher in 0..<Self.wakePushers {
                            group.addTask {
                                for index in 0..<Self.wakePushesEach {
                                    _ = try await pushing.push(
                                        space: "wake-\(pusher)", operations: [Self.wakeOperation(index, device: "p\(pusher)")])
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                throughput[implementation, default: []].append(Double(total) / seconds)

                let holder = try await PostgresSyncServer.connect(schemaConninfo, liveWake: wake)
                let pusher = try await PostgresSyncServer.connect(schemaConninfo, liveWake: wake)
                var latencies: [Double] = []
                for index in 0..<Self.wakeSamples {
                    let held = Task {
                        try await holder.pull(
                            space: "latency", after: SyncCursor(counter: Int64(index)), limit: 10, collections: nil,
                            wait: .seconds(30))
                    }
                    // Held (and, the first time, the wake session set up): a handshake, not a guess.
                    while holder.heldPulls == 0 || holder.wakeSession.sessions == 0 { try await Task.sleep(for: .microseconds(200)) }
                    let start = ContinuousClock.now
                    _ = try await pusher.push(space: "latency", operations: [Self.wakeOperation(index, device: "latency")])
                    let page = try await held.value
                    latencies.append((ContinuousClock.now - start).seconds)
                    guard page.changes.count == 1 else { throw BenchFailure("S9: a held pull woke with \(page.changes.count) changes") }
                }
                p50[implementation, default: []].append(Stats.percentile(latencies, 0.5) * 1e3)
                p99[implementation, default: []].append(Stats.percentile(latencies, 0.99) * 1e3)
            }
        }
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
        for implementation in [Implementation.raw, .recordKeeper] {
            let how = implementation == .raw ? "poll(every: 5 ms): no NOTIFY" : "listen: NOTIFY in every push"
            record("S9", variant: "concurrent 1-record pushes", n: Self.wakePushers * Self.wakePushesEach, implementation,
                   metric: "ops_per_s", samples: throughput[implementation] ?? [], note: how)
            record("S9", variant: "wake X → Y", n: Self.wakeSamples, implementation, metric: "p50_ms",
                   samples: p50[implementation] ?? [], note: "push start on Y to page on X")
            record("S9", variant: "wake X → Y", n: Self.wakeSamples, implementation, metric: "p99_ms",
                   samples: p99[implementation] ?? [])
        }
    }

    static func wakeOperation(_ index: Int, device: String) -> SyncOperation {
        SyncOperation(
            device: device, sequence: Int64(index + 1),
            changes: [SyncChange(collection: benchCollection, key: "k\(index)", value: .payload(Data(repeating: 120, count: 100)), base: nil)])
    }

    /// `conninfo` (keywords) with the bench schema as its `search_path`, so that every session
    /// a server opens (its wake session too) uses it.
    static func benchSchemaConninfo(_ conninfo: String, schema: String = "recordkeeper_bench") -> String {
        conninfo + " options='-c search_path=\(schema)'"
    }
}
