import Foundation
import RecordKeeper

/// The codec the raw typed baseline wraps around SQLite in T1 and T3 (both write the same
/// bytes). `foundation` is `RecordCoding.makeEncoder()`/`makeDecoder()`, Foundation's
/// `JSONEncoder`/`JSONDecoder` with the repository's settings: the ratio then says what an app
/// saves by using RecordKeeper instead of SQLite + Foundation. `recordJSON` is the library's own
/// `RecordJSONEncoder`/`RecordJSONDecoder`, the codec `RecordRepository` uses: the ratio then says
/// what the library itself costs over SQLite, the codec being equal.
enum RawCodec: String, CaseIterable {
    case foundation = "raw+Foundation"
    case recordJSON = "raw+RecordJSON"

    /// The order in repeat `index`: alternated, so that neither always runs first.
    static func order(forRepeat index: Int) -> [RawCodec] {
        index % 2 == 0 ? allCases : allCases.reversed()
    }

    /// The row's variant: `prefix` (the durability for T1) and the codec.
    func variant(_ prefix: String = "") -> String { prefix.isEmpty ? rawValue : "\(prefix) \(rawValue)" }

    var note: String {
        switch self {
        case .foundation: "raw side coded by Foundation's JSONEncoder/JSONDecoder: the ratio is RecordKeeper vs SQLite + Foundation"
        case .recordJSON: "raw side coded by RecordJSONEncoder/Decoder, the repository's codec: the ratio is the library's cost over SQLite"
        }
    }
}

/// T1–T4: the typed `RecordRepository<Item>` against the raw baseline wrapped in a codec,
/// producing the same values (`[Item]` in key order for a load), and the naive store (which is
/// typed already). T1 and T3 run the raw side with both codecs of `RawCodec` in every repeat
/// (rows `… raw+Foundation` and `… raw+RecordJSON`, the same RecordKeeper samples in both); T2
/// and T4 use Foundation's (`RecordCoding.makeEncoder()` / `makeDecoder()`: JSON with sorted
/// keys, one instance each, reused).
extension BenchRunner {
    func runTypedWorkload(_ workload: WorkloadID) async throws {
        switch workload {
        case .t1: try await runTypedBulkSave()
        case .t2:
            for durability in [Durability.normal, .full] { try await runTypedSingleSaves(durability: durability) }
        case .t3: try await runTypedLoad()
        case .t4: try await runTypedItemReads()
        default: break
        }
    }

    private func makeRepository(_ store: RecordStore) -> RecordRepository<Item> {
        RecordRepository<Item>(store: store, collection: benchCollection)
    }

    // MARK: T1

    private func runTypedBulkSave() async throws {
        let n = options.n
        log("T1 typed bulk save, N=\(n)")
        let items = Dataset.items(count: n)
        var samples: [Implementation: [Double]] = [:]
        var rawSamples: [RawCodec: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                let url = storeURL(implementation, purpose: "t1", n: n)
                removeStore(url)
                let seconds: Double
                switch implementation {
                case .raw:
                    for codec in RawCodec.order(forRepeat: repeatIndex) {
                        removeStore(url)
                        let store = try RawSQLiteStore(path: url.path, durability: options.durability)
                        let encode: (Item) throws -> Data
                        switch codec {
                        case .foundation:
                            let encoder = RecordCoding.makeEncoder()
                            encode = { try encoder.encode($0) }
                        case .recordJSON:
                            let encoder = RecordJSONEncoder()
                            encode = { try encoder.encode($0) }
                        }
                        rawSamples[codec, default: []].append(try measure {
                            var values: [String: Data] = [:]
                            values.reserveCapacity(items.count)
                            for item in items { values[item.id] = try encode(item) }
                            try store.insertAll(values)
                        })
                    }
                    removeStore(url)
                    continue
                case .recordKeeper:
                    let repository = makeRepository(try await RecordKeeperSide.open(url: url, durability: options.durability))
                    seconds = try await measureAsync { try await repository.save(items) }
                case .naive:
                    let store = NaiveJSONStore<Item>(fileURL: url)
                    seconds = try await measureAsync { try await store.saveAll(items) }
                }
                samples[implementation, default: []].append(seconds)
                removeStore(url)
            }
        }
        recordTypedRows("T1", prefix: options.durability.rawValue, n: n, raw: rawSamples, others: samples)
    }

    /// The rows of T1 or T3: each raw codec's row with RecordKeeper's beside it (the same
    /// samples, so that each gets its ratio), and the naive store's beside the Foundation row.
    private func recordTypedRows(
        _ workload: String, prefix: String = "", n: Int, raw: [RawCodec: [Double]], others: [Implementation: [Double]],
        naiveNote: String? = nil
    ) {
        for codec in RawCodec.allCases {
            let variant = codec.variant(prefix)
            if let values = raw[codec] { record(workload, variant: variant, n: n, .raw, metric: "time_s", samples: values, note: codec.note) }
            if let values = others[.recordKeeper] { record(workload, variant: variant, n: n, .recordKeeper, metric: "time_s", samples: values) }
            if codec == .foundation, let values = others[.naive] {
                record(workload, variant: variant, n: n, .naive, metric: "time_s", samples: values, note: naiveNote)
            }
        }
    }

    // MARK: T2

    private func runTypedSingleSaves(durability: Durability) async throws {
        let n = options.n
        let operations = options.upserts
        log("T2 typed single saves, N=\(n), durability \(durability.rawValue)")
        let raw = try RawSQLiteStore(path: try await fixture(.raw, n: n).path, durability: durability)
        let encoder = RecordCoding.makeEncoder()
        let repository = makeRepository(try await RecordKeeperSide.open(url: try await fixture(.recordKeeper, n: n), durability: durability))
        let naive = NaiveJSONStore<Item>(fileURL: try await fixture(.naive, n: n))
        // The repository bases saves on versions it has seen (an unseen existing item is a
        // conflict), so it loads once first, as an app would.
        _ = try await repository.load()

        var p50: [Implementation: [Double]] = [:]
        var p99: [Implementation: [Double]] = [:]
        var throughput: [Implementation: [Double]] = [:]
        var operationCount: [Implementation: Int] = [:]
        for repeatIndex in 0..<options.repeats {
            let indexes = Dataset.randomIndexes(count: operations, below: n, seed: 6_000 + UInt64(repeatIndex))
            let items = indexes.map { Dataset.item($0, revision: nextRevision()) }
            for implementation in order(forRepeat: repeatIndex) {
                var latencies: [Double] = []
                latencies.reserveCapacity(operations)
                let wallStart = ContinuousClock.now
                switch implementation {
                case .raw:
                    for item in items {
                        latencies.append(try measure { try raw.put(key: item.id, data: try encoder.encode(item)) })
                    }
                case .recordKeeper:
                    for item in items {
                        latencies.append(try await measureAsync { try await repository.save(item) })
                    }
                    try await RecordKeeperSide.drainScheduledWork(repository.store)
                case .naive:
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
            record("T2", variant: durability.rawValue, n: n, implementation, metric: "p50_us", samples: values, count: count,
                   note: implementation == .recordKeeper ? fsyncNote(durability) : nil)
            record("T2", variant: durability.rawValue, n: n, implementation, metric: "p99_us", samples: p99[implementation] ?? [], count: count)
            record("T2", variant: durability.rawValue, n: n, implementation, metric: "ops_per_s", samples: throughput[implementation] ?? [], count: count)
        }
    }

    // MARK: T3

    private func runTypedLoad() async throws {
        let n = options.n
        log("T3 typed load, N=\(n)")
        let raw = try RawSQLiteStore(path: try await fixture(.raw, n: n).path, durability: options.durability)
        let foundationDecoder = RecordCoding.makeDecoder()
        let recordDecoder = RecordJSONDecoder()
        let repository = makeRepository(try await RecordKeeperSide.open(url: try await fixture(.recordKeeper, n: n), durability: options.durability))
        let naive = NaiveJSONStore<Item>(fileURL: try await fixture(.naive, n: n))
        _ = try raw.readAll()
        _ = try await repository.load()

        var samples: [Implementation: [Double]] = [:]
        var rawSamples: [RawCodec: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                var count = 0
                let seconds: Double
                switch implementation {
                case .raw:
                    // The primary-key scan is already in key (UTF-8 byte) order: the same
                    // sorted [Item] the repository returns.
                    for codec in RawCodec.order(forRepeat: repeatIndex) {
                        let decode: (Data) throws -> Item = switch codec {
                        case .foundation: { try foundationDecoder.decode(Item.self, from: $0) }
                        case .recordJSON: { try recordDecoder.decode(Item.self, from: $0) }
                        }
                        rawSamples[codec, default: []].append(try measure {
                            var items: [Item] = []
                            items.reserveCapacity(n)
                            try raw.forEachRecord { _, payload in items.append(try decode(Data(payload))) }
                            count = items.count
                        })
                        guard count == n else { throw BenchFailure("T3 \(codec.rawValue) loaded \(count) of \(n)") }
                    }
                    continue
                case .recordKeeper:
                    seconds = try await measureAsync { count = try await repository.load().count }
                case .naive:
                    seconds = await measureAsync { count = await naive.getAll().count }
                }
                guard count == n else { throw BenchFailure("T3 \(implementation.rawValue) loaded \(count) of \(n)") }
                samples[implementation, default: []].append(seconds)
            }
        }
        recordTypedRows("T3", n: n, raw: rawSamples, others: samples, naiveNote: "copy of the in-memory dictionary")
    }

    // MARK: T4

    private func runTypedItemReads() async throws {
        let n = options.n
        let reads = options.pointReads
        log("T4 typed item(id) reads, N=\(n), \(reads) reads")
        let raw = try RawSQLiteStore(path: try await fixture(.raw, n: n).path, durability: options.durability)
        let decoder = RecordCoding.makeDecoder()
        let repository = makeRepository(try await RecordKeeperSide.open(url: try await fixture(.recordKeeper, n: n), durability: options.durability))
        let naive = NaiveJSONStore<Item>(fileURL: try await fixture(.naive, n: n))
        _ = try raw.readAll()
        _ = try await repository.load()

        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            let keys = Dataset.randomIndexes(count: reads, below: n, seed: 8_000 + UInt64(repeatIndex)).map(Dataset.key)
            for implementation in order(forRepeat: repeatIndex) {
                var found = 0
                let seconds: Double
                switch implementation {
                case .raw:
                    seconds = try measure {
                        for key in keys {
                            if let data = try raw.value(key: key), try decoder.decode(Item.self, from: data).id == key { found += 1 }
                        }
                    }
                case .recordKeeper:
                    seconds = try await measureAsync {
                        for key in keys where try await repository.item(key)?.id == key { found += 1 }
                    }
                case .naive:
                    seconds = await measureAsync {
                        for key in keys where await naive.get(key) != nil { found += 1 }
                    }
                }
                guard found == reads else { throw BenchFailure("T4 \(implementation.rawValue) found \(found) of \(reads)") }
                samples[implementation, default: []].append(seconds)
            }
        }
        for implementation in Implementation.allCases {
            guard let values = samples[implementation] else { continue }
            record("T4", n: n, implementation, metric: "time_s", samples: values, count: values.count * reads)
            record("T4", n: n, implementation, metric: "us_per_read", samples: values.map { $0 / Double(reads) * 1e6 }, count: values.count * reads)
        }
    }
}
