import Dispatch
import Foundation
import RecordKeeper

/// W8: point reads while a write transaction is open.
extension BenchRunner {
    /// `options.pointReads` random point reads of existing keys while a write transaction that
    /// has changed a record stays open, uncommitted, for the whole measurement:
    /// - raw: a second raw connection holds it (`BEGIN IMMEDIATE`, an upsert, no commit) while
    ///   the raw baseline's connection reads;
    /// - RecordKeeper: the store's own ``RecordStore/write(_:)``, whose body waits on a gate,
    ///   while `value` reads through the same `RecordStore`. (With one connection for reads
    ///   and writes, every read would wait for that transaction to end.)
    /// The naive store has no transactions; it does not run.
    func runPointReadsBesideWrite() async throws {
        let n = options.n
        let reads = options.pointReads
        log("W8 point reads beside an open write transaction, N=\(n), \(reads) reads")
        let rawURL = try await fixture(.raw, n: n)
        let raw = try RawSQLiteStore(path: rawURL.path, durability: options.durability)
        let rk = try await RecordKeeperSide.open(url: try await fixture(.recordKeeper, n: n), durability: options.durability)
        _ = try raw.readAll()
        _ = try await rk.read(benchCollection)
        let pending = Data(#"{"pending":true}"#.utf8)

        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            let keys = Dataset.randomIndexes(count: reads, below: n, seed: 8_000 + UInt64(repeatIndex)).map(Dataset.key)
            for implementation in order(forRepeat: repeatIndex) where implementation != .naive {
                var found = 0
                let seconds: Double
                switch implementation {
                case .raw:
                    let writer = try RawSQLiteStore(path: rawURL.path, durability: options.durability)
                    try writer.beginHoldingWrite(key: Dataset.key(0), data: pending)
                    seconds = try measure {
                        for key in keys where try raw.value(key: key) != nil { found += 1 }
                    }
                    try writer.rollbackOpenTransaction()
                case .recordKeeper:
                    let entered = DispatchSemaphore(value: 0)
                    let release = DispatchSemaphore(value: 0)
                    let writer = Task {
                        try await rk.write { transaction in
                            try transaction.put(benchCollection, key: Dataset.key(0), data: pending)
                            entered.signal()
                            release.wait()
                            throw HeldTransactionEnded()  // roll back: the fixture stays as it was
                        }
                    }
                    await waitOffThePool(entered)
                    seconds = try await measureAsync {
                        for key in keys where try await rk.value(benchCollection, key: key) != nil { found += 1 }
                    }
                    release.signal()
                    do {
                        try await writer.value
                    } catch is HeldTransactionEnded {}
                case .naive:
                    continue
                }
                guard found == reads else { throw BenchFailure("W8 \(implementation.rawValue) found \(found) of \(reads)") }
                samples[implementation, default: []].append(seconds)
            }
        }
        for implementation in Implementation.allCases {
            guard let values = samples[implementation] else { continue }
            let note = implementation == .recordKeeper
                ? "the store's own write() held open; a single connection would make each read wait for it" : nil
            record("W8", n: n, implementation, metric: "time_s", samples: values, count: values.count * reads)
            record("W8", n: n, implementation, metric: "us_per_read", samples: values.map { $0 / Double(reads) * 1e6 },
                   count: values.count * reads, note: note)
        }
    }
}

/// Thrown by W8's held transaction to roll it back.
private struct HeldTransactionEnded: Error {}

/// Waits for `semaphore` on a dispatch thread, not on one of the cooperative pool's.
private func waitOffThePool(_ semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
            semaphore.wait()
            continuation.resume()
        }
    }
}
