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
                   note: String(format: "%.2fx the p50 of apply alone", ratio))
            await store.close()
            // The fixture now holds outbox rows: build it again for later workloads.
            dropFixtures(n: n)
        }
    }
}
