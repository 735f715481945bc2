import Foundation
import RecordKeeper

/// O1: what an outbox operation adds to a save. Each repeat runs `options.upserts` pairs into
/// a store holding N records, alternating `apply` of one record alone and `apply` of one
/// record plus one `enqueue` (one commit each), so both see the same machine noise.
/// Reports the p50 of each and, on the enqueue row, its ratio to `apply` alone.
extension BenchRunner {
    func runOutboxEnqueue() async throws {
        let n = options.n
        for durability in [Durability.normal, .full] {
            log("O1 apply + enqueue vs apply, N=\(n), durability \(durability.rawValue)")
            let url = try await fixture(.recordKeeper, n: n)
            let store = try await RecordKeeperSide.open(url: url, durability: durability)
            let encoder = Dataset.makeEncoder()
            var p50: [Bool: [Double]] = [:]
            for repeatIndex in 0..<options.repeats {
                let indexes = Dataset.randomIndexes(count: options.upserts * 2, below: n, seed: 7_000 + UInt64(repeatIndex))
                let updates = try indexes.map { index -> (String, Data) in
                    let item = Dataset.item(index, revision: nextRevision())
                    return (item.id, try encoder.encode(item))
                }
                var alone: [Double] = [], withEnqueue: [Double] = []
                for (number, (key, data)) in updates.enumerated() {
                    let changes = RecordChanges(upserts: [key: data])
                    // Alternate which kind goes first in each pair.
                    if number % 2 == (repeatIndex % 2) {
                        alone.append(try await measureAsync { try await store.apply(benchCollection, changes: changes) })
                    } else {
                        let message = OutboxMessage(kind: "item.update", payload: data, orderingKey: key)
                        withEnqueue.append(try await measureAsync {
                            try await store.apply(benchCollection, changes: changes, enqueue: [message])
                        })
                    }
                }
                p50[false, default: []].append(Stats.percentile(alone, 0.5) * 1e6)
                p50[true, default: []].append(Stats.percentile(withEnqueue, 0.5) * 1e6)
            }
            let ratio = Stats.median(p50[true] ?? []) / Stats.median(p50[false] ?? [])
            record("O1", variant: "\(durability.rawValue) apply", n: n, .recordKeeper, metric: "p50_us",
                   samples: p50[false] ?? [], count: options.upserts * options.repeats)
            record("O1", variant: "\(durability.rawValue) apply+enqueue", n: n, .recordKeeper, metric: "p50_us",
                   samples: p50[true] ?? [], count: options.upserts * options.repeats,
                   note: "\(durability.rawValue) apply+enqueue: " + String(format: "%.2fx the p50 of apply alone", ratio))
            await store.close()
            try await runRawOutboxEnqueue(n: n, durability: durability)
            // The fixtures now hold outbox rows: build them again for later workloads.
            dropFixtures(n: n)
        }
    }

    /// O1's physical floor: the same commits through the SQLite C API (`RawSQLiteStore`),
    /// rotating `put` alone, `put` plus one row in the outbox table of format 2, and `put` plus
    /// one row in the same table without its unique index on `id`. The ratios say what the
    /// pages cost, apart from RecordKeeper: each B-tree a commit touches is one more page
    /// written to the WAL.
    private func runRawOutboxEnqueue(n: Int, durability: Durability) async throws {
        guard options.implementations.contains(.raw) else { return }
        let url = try await fixture(.raw, n: n)
        let store = try RawSQLiteStore(path: url.path, durability: durability)
        let encoder = Dataset.makeEncoder()
        var p50: [Int: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            let indexes = Dataset.randomIndexes(count: options.upserts * 3, below: n, seed: 7_500 + UInt64(repeatIndex))
            var times: [Int: [Double]] = [:]
            for (number, index) in indexes.enumerated() {
                let item = Dataset.item(index, revision: nextRevision())
                let data = try encoder.encode(item)
                let kind = (number + repeatIndex) % 3
                let message = OutboxMessage(kind: "item.update", payload: data, orderingKey: item.id)
                times[kind, default: []].append(try measure {
                    if kind == 0 {
                        try store.put(key: item.id, data: data)
                    } else {
                        try store.put(key: item.id, data: data, enqueue: message, unique: kind == 1)
                    }
                })
            }
            for (kind, samples) in times { p50[kind, default: []].append(Stats.percentile(samples, 0.5) * 1e6) }
        }
        let alone = Stats.median(p50[0] ?? [])
        for (kind, variant) in [(0, "put"), (1, "put+outbox row"), (2, "put+row without unique id index")] {
            record("O1", variant: "\(durability.rawValue) \(variant)", n: n, .raw, metric: "p50_us",
                   samples: p50[kind] ?? [], count: options.upserts * options.repeats,
                   note: kind == 0 ? nil : "\(durability.rawValue) \(variant): "
                       + String(format: "%.2fx the p50 of put alone", Stats.median(p50[kind] ?? []) / alone))
        }
    }

    /// O2: what delivering a backlog costs per operation. Enqueues `size` operations (two thirds
    /// on 50 ordering keys, the rest without a key; 500 per commit) into a fresh store with
    /// durability `normal`, then times one `deliverDue()` with a transport that accepts
    /// everything at once. The processor records the deliveries that ended together and claims
    /// the next ones in one transaction (at most `maximumConcurrentDeliveries` run at a time),
    /// so the time per operation should not grow with the backlog.
    func runOutboxBacklog() async throws {
        let sizes = options.quick ? [200, 1_000] : [1_000, 10_000]
        for size in sizes {
            log("O2 deliverDue of a backlog of \(size)")
            var seconds: [Double] = []
            for repeatIndex in 0..<options.repeats {
                let url = directory.appendingPathComponent("o2-\(size)-\(repeatIndex).sqlite")
                let store = RecordStore(url: url, options: RecordStore.Options(durability: .normal))
                var batch: [OutboxMessage] = []
                for index in 0..<size {
                    batch.append(OutboxMessage(
                        kind: "item.update", payload: Data(repeating: 0x61, count: 100),
                        orderingKey: index % 3 == 0 ? nil : "key-\(index % 50)"))
                    if batch.count == 500 || index == size - 1 {
                        try await store.enqueue(batch)
                        batch = []
                    }
                }
                let processor = OutboxProcessor(store: store, transport: AcceptingTransport())
                var report = OutboxDeliveryReport()
                seconds.append(try await measureAsync { report = try await processor.deliverDue() })
                guard report.delivered == size, try await store.outbox.pending().isEmpty else {
                    throw BenchFailure("O2 delivered \(report.delivered) of \(size)")
                }
                await store.close()
            }
            record("O2", variant: "backlog", n: size, .recordKeeper, metric: "time_s", samples: seconds)
            record("O2", variant: "backlog", n: size, .recordKeeper, metric: "ops_per_s",
                   samples: seconds.map { Double(size) / $0 })
        }
    }
}

/// Accepts every operation at once (O2 measures the outbox, not a transport).
private struct AcceptingTransport: OutboxTransport {
    func deliver(_ operation: OutboxOperation) async throws {}
}

