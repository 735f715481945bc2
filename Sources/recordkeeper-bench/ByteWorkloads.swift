import Foundation
import RecordKeeper

/// W1–W4 and W7 against the byte API of `RecordStore`, the raw baseline and the naive store.
/// The naive store only knows `Item` values (the seed's pattern has no byte layer), so its
/// figures include its JSON coding.
extension BenchRunner {
    // MARK: W1

    /// Bulk insert of N records into an empty store, one transaction (`replace` for RecordKeeper).
    func runBulkInsert() async throws {
        let n = options.n
        log("W1 bulk insert, N=\(n)")
        let values = try payloads(n: n)
        let items = Dataset.items(count: n)
        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                let url = storeURL(implementation, purpose: "w1", n: n)
                removeStore(url)
                let seconds: Double
                switch implementation {
                case .raw:
                    let store = try RawSQLiteStore(path: url.path, durability: options.durability)
                    seconds = try measure { try store.insertAll(values) }
                    guard try store.count() == n else { throw BenchFailure("W1 raw count") }
                case .recordKeeper:
                    let store = try await RecordKeeperSide.open(url: url, durability: options.durability)
                    seconds = try await measureAsync { try await store.replace(benchCollection, values: values) }
                case .naive:
                    let store = NaiveJSONStore<Item>(fileURL: url)
                    seconds = try await measureAsync { try await store.saveAll(items) }
                }
                samples[implementation, default: []].append(seconds)
                removeStore(url)
            }
        }
        for implementation in Implementation.allCases {
            guard let values = samples[implementation] else { continue }
            record("W1", variant: options.durability.rawValue, n: n, implementation, metric: "time_s", samples: values)
        }
    }

    // MARK: W2 (and the W7 latency curve)

    /// `options.upserts` single-record upserts of existing keys, each its own commit, into a
    /// store holding N. Reports p50/p99 latency and ops/s (medians over repeats). Throughput is
    /// wall-clock: saves ÷ the time from the first save until the store has done the work they
    /// scheduled (raw checkpoints inside its commits, RecordKeeper on its executor; see
    /// `RecordKeeperSide.drainScheduledWork`), so neither side's checkpoints fall outside it.
    func runSingleUpserts(workload: String, variant: String? = nil, n: Int, durability: Durability,
                          includeNaive: Bool) async throws {
        let variant = variant ?? durability.rawValue
        let operations = options.upserts
        let includeNaive = includeNaive && options.implementations.contains(.naive)
        log("\(workload) single upserts, N=\(n), durability \(durability.rawValue)")
        let rawURL = try await fixture(.raw, n: n)
        let rkURL = try await fixture(.recordKeeper, n: n)
        let naiveURL = includeNaive ? try await fixture(.naive, n: n) : nil

        let raw = try RawSQLiteStore(path: rawURL.path, durability: durability)
        _ = try raw.value(key: Dataset.key(0))
        guard try raw.synchronousLevel() == (durability == .full ? 2 : 1) else {
            throw BenchFailure("raw baseline did not take synchronous=\(durability.rawValue)")
        }
        let rk = try await RecordKeeperSide.open(url: rkURL, durability: durability)
        let naive = naiveURL.map { NaiveJSONStore<Item>(fileURL: $0) }
        if let naive { guard await naive.count == n else { throw BenchFailure("naive fixture count") } }

        let encoder = Dataset.makeEncoder()
        var p50: [Implementation: [Double]] = [:]
        var p99: [Implementation: [Double]] = [:]
        var throughput: [Implementation: [Double]] = [:]
        var operationCount: [Implementation: Int] = [:]
        for repeatIndex in 0..<options.repeats {
            let indexes = Dataset.randomIndexes(count: operations, below: n, seed: 2_000 + UInt64(repeatIndex))
            // A revision never written before for every save: an upsert of identical bytes
            // lets SQLite skip the page write (and the sync), and the store skip the record.
            let items = indexes.map { Dataset.item($0, revision: nextRevision()) }
            let updates = try items.map { ($0.id, try encoder.encode($0)) }
            for implementation in order(forRepeat: repeatIndex) {
                var latencies: [Double] = []
                latencies.reserveCapacity(operations)
                let wallStart = ContinuousClock.now
                switch implementation {
                case .raw:
                    for (key, data) in updates {
                        latencies.append(try measure { try raw.put(key: key, data: data) })
                    }
                case .recordKeeper:
                    for (key, data) in updates {
                        latencies.append(try await measureAsync {
                            try await rk.put(benchCollection, key: key, data: data)
                        })
                    }
                    try await RecordKeeperSide.drainScheduledWork(rk)
                case .naive:
                    guard let naive else { continue }
                    var total = 0.0
                    for item in items {
                        let seconds = try await measureAsync { try await naive.save(item) }
                        latencies.append(seconds)
                        total += seconds
                        if total > options.naiveBudget { break }
                    }
                }
                p50[implementation, default: []].append(Stats.percentile(latencies, 0.5) * 1e6)
                p99[implementation, default: []].append(Stats.percentile(latencies, 0.99) * 1e6)
                throughput[implementation, default: []].append(Double(latencies.count) / (ContinuousClock.now - wallStart).seconds)
                operationCount[implementation, default: 0] += latencies.count
            }
        }
        for implementation in Implementation.allCases {
            guard let values = p50[implementation] else { continue }
            let count = operationCount[implementation] ?? 0
            let note = implementation == .naive && count < operations * options.repeats
                ? "\(count) saves in all (\(options.naiveBudget)s budget per repeat)"
                : implementation == .recordKeeper ? fsyncNote(durability) : nil
            record(workload, variant: variant, n: n, implementation, metric: "p50_us", samples: values, count: count, note: note)
            record(workload, variant: variant, n: n, implementation, metric: "p99_us", samples: p99[implementation] ?? [], count: count)
            record(workload, variant: variant, n: n, implementation, metric: "ops_per_s", samples: throughput[implementation] ?? [], count: count)
        }
    }

    // MARK: W3 (and the W7 throughput curve)

    /// Reads the whole collection into `[String: Data]` (the naive store: `getAll()` from its
    /// in-memory dictionary, as its API offers).
    func runWholeReads(workload: String, variant: String = "", n: Int, includeNaive: Bool) async throws {
        let includeNaive = includeNaive && options.implementations.contains(.naive)
        log("\(workload) whole-collection reads, N=\(n)")
        let rawURL = try await fixture(.raw, n: n)
        let rkURL = try await fixture(.recordKeeper, n: n)
        let naiveURL = includeNaive ? try await fixture(.naive, n: n) : nil

        let raw = try RawSQLiteStore(path: rawURL.path, durability: options.durability)
        let rk = try await RecordKeeperSide.open(url: rkURL, durability: options.durability)
        let naive = naiveURL.map { NaiveJSONStore<Item>(fileURL: $0) }
        // One untimed read each, so every side starts with a warm page cache.
        _ = try raw.readAll()
        _ = try await rk.read(benchCollection)

        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                var count = 0
                let seconds: Double
                switch implementation {
                case .raw:
                    var result: [String: Data] = [:]
                    seconds = try measure { result = try raw.readAll() }
                    count = result.count
                case .recordKeeper:
                    var result: [String: Data]?
                    seconds = try await measureAsync { result = try await rk.read(benchCollection) }
                    count = result?.count ?? 0
                case .naive:
                    guard let naive else { continue }
                    var result: [Item] = []
                    seconds = await measureAsync { result = await naive.getAll() }
                    count = result.count
                }
                guard count == n else { throw BenchFailure("\(workload) \(implementation.rawValue) read \(count) of \(n)") }
                samples[implementation, default: []].append(seconds)
            }
        }
        for implementation in Implementation.allCases {
            guard let values = samples[implementation] else { continue }
            let note = implementation == .naive ? "copy of the in-memory dictionary (its file is read only at init, see W5)" : nil
            record(workload, variant: variant, n: n, implementation, metric: "time_s", samples: values, note: note)
            record(workload, variant: variant, n: n, implementation, metric: "records_per_s", samples: values.map { Double(n) / $0 })
        }
    }

    // MARK: W4

    /// `options.pointReads` random point reads of existing keys, awaited one by one.
    func runPointReads() async throws {
        let n = options.n
        let reads = options.pointReads
        log("W4 point reads, N=\(n), \(reads) reads")
        let raw = try RawSQLiteStore(path: try await fixture(.raw, n: n).path, durability: options.durability)
        let rk = try await RecordKeeperSide.open(url: try await fixture(.recordKeeper, n: n), durability: options.durability)
        let naive = options.implementations.contains(.naive)
            ? NaiveJSONStore<Item>(fileURL: try await fixture(.naive, n: n)) : nil
        _ = try raw.readAll()
        _ = try await rk.read(benchCollection)

        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            let keys = Dataset.randomIndexes(count: reads, below: n, seed: 4_000 + UInt64(repeatIndex)).map(Dataset.key)
            for implementation in order(forRepeat: repeatIndex) {
                var found = 0
                let seconds: Double
                switch implementation {
                case .raw:
                    seconds = try measure {
                        for key in keys where try raw.value(key: key) != nil { found += 1 }
                    }
                case .recordKeeper:
                    seconds = try await measureAsync {
                        for key in keys where try await rk.value(benchCollection, key: key) != nil { found += 1 }
                    }
                case .naive:
                    guard let naive else { continue }
                    seconds = await measureAsync {
                        for key in keys where await naive.get(key) != nil { found += 1 }
                    }
                }
                guard found == reads else { throw BenchFailure("W4 \(implementation.rawValue) found \(found) of \(reads)") }
                samples[implementation, default: []].append(seconds)
            }
        }
        for implementation in Implementation.allCases {
            guard let values = samples[implementation] else { continue }
            record("W4", n: n, implementation, metric: "time_s", samples: values, count: values.count * reads)
            record("W4", n: n, implementation, metric: "us_per_read", samples: values.map { $0 / Double(reads) * 1e6 }, count: values.count * reads)
        }
    }

    // MARK: W7

    /// W2 latency (durability `normal`) and W3 throughput at every size of `--sizes`.
    /// The naive store runs up to `--naive-max-n`.
    func runScaling() async throws {
        for n in options.scalingSizes {
            let includeNaive = n <= options.naiveMaxN
            try await runSingleUpserts(workload: "W7", variant: "W2-normal", n: n, durability: .normal, includeNaive: includeNaive)
            try await runWholeReads(workload: "W7", variant: "W3", n: n, includeNaive: includeNaive)
            if n != options.n { dropFixtures(n: n) }
        }
    }
}
