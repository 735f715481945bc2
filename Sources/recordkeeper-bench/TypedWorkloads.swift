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
/// (rows `… raw+Foundation` and `… raw+RecordJSON`, the same RecordKeeper samples in both), and
/// so do T2 and T4 (each raw codec in turn over the same saves or reads). Foundation's coders are
/// `RecordCoding.makeEncoder()` / `makeDecoder()`: JSON with sorted keys, one instance each, reused.
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
        metric: String = "time_s", naiveNote: String? = nil
    ) {
        for codec in RawCodec.allCases {
            let variant = codec.variant(prefix)
            if let values = raw[codec] { record(workload, variant: variant, n: n, .raw, metric: metric, samples: values, note: codec.note) }
            if let values = others[.recordKeeper] { record(workload, variant: variant, n: n, .recordKeeper, metric: metric, samples: values) }
            if codec == .foundation, let values = others[.naive] {
                record(workload, variant: variant, n: n, .naive, metric: metric, samples: values, note: naiveNote)
            }
        }
    }

    // MARK: T2

    private func runTypedSingleSaves(durability: Durability) async throws {
        let n = options.n
        let operations = options.upserts
        log("T2 typed single saves, N=\(n), durability \(durability.rawValue)")
        let raw = try RawSQLiteStore(path: try await fixture(.raw, n: n).path, durability: durability)
        let foundationEncoder = RecordCoding.makeEncoder()
        let recordEncoder = RecordJSONEncoder()
        let repository = makeRepository(try await RecordKeeperSide.open(url: try await fixture(.recordKeeper, n: n), durability: durability))
        let naive = NaiveJSONStore<Item>(fileURL: try await fixture(.naive, n: n))
        // The repository bases saves on versions it has seen (an unseen existing item is a
        // conflict), so it loads once first, as an app would.
        _ = try await repository.load()

        var runs: [Implementation: SaveLatencies] = [:]
        var rawRuns: [RawCodec: SaveLatencies] = [:]
        for repeatIndex in 0..<options.repeats {
            let indexes = Dataset.randomIndexes(count: operations, below: n, seed: 6_000 + UInt64(repeatIndex))
            let items = indexes.map { Dataset.item($0, revision: nextRevision()) }
            for implementation in order(forRepeat: repeatIndex) {
                var latencies: [Double] = []
                latencies.reserveCapacity(operations)
                let wallStart = ContinuousClock.now
                switch implementation {
                case .raw:
                    // Each codec in turn, over the same keys: one row per codec (see `RawCodec`).
                    // The second pass saves new revisions, so that it writes as much as the first.
                    for (pass, codec) in RawCodec.order(forRepeat: repeatIndex).enumerated() {
                        let items = pass == 0 ? items : indexes.map { Dataset.item($0, revision: nextRevision()) }
                        let encode: (Item) throws -> Data = switch codec {
                        case .foundation: { try foundationEncoder.encode($0) }
                        case .recordJSON: { try recordEncoder.encode($0) }
                        }
                        latencies.removeAll(keepingCapacity: true)
                        let codecStart = ContinuousClock.now
                        for item in items {
                            latencies.append(try measure { try raw.put(key: item.id, data: try encode(item)) })
                        }
                        rawRuns[codec, default: SaveLatencies()].add(latencies, since: codecStart)
                    }
                    continue
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
                runs[implementation, default: SaveLatencies()].add(latencies, since: wallStart)
            }
        }
        for codec in RawCodec.allCases {
            let variant = codec.variant(durability.rawValue)
            if let run = rawRuns[codec] { recordSaveRows("T2", variant: variant, n: n, .raw, run, note: codec.note) }
            if let run = runs[.recordKeeper] {
                recordSaveRows("T2", variant: variant, n: n, .recordKeeper, run, note: fsyncNote(durability))
            }
            if codec == .foundation, let run = runs[.naive] { recordSaveRows("T2", variant: variant, n: n, .naive, run) }
        }
    }

    /// T2's p50, p99 and wall-clock throughput of each repeat's saves, for one side.
    private struct SaveLatencies {
        var p50: [Double] = []
        var p99: [Double] = []
        var throughput: [Double] = []
        var count = 0

        mutating func add(_ latencies: [Double], since start: ContinuousClock.Instant) {
            p50.append(Stats.percentile(latencies, 0.5) * 1e6)
            p99.append(Stats.percentile(latencies, 0.99) * 1e6)
            throughput.append(Double(latencies.count) / (ContinuousClock.now - start).seconds)
            count += latencies.count
        }
    }

    private func recordSaveRows(
        _ workload: String, variant: String, n: Int, _ implementation: Implementation, _ run: SaveLatencies, note: String? = nil
    ) {
        record(workload, variant: variant, n: n, implementation, metric: "p50_us", samples: run.p50, count: run.count, note: note)
        record(workload, variant: variant, n: n, implementation, metric: "p99_us", samples: run.p99, count: run.count)
        record(workload, variant: variant, n: n, implementation, metric: "ops_per_s", samples: run.throughput, count: run.count)
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
        // CPU time of the whole process beside the wall-clock time: the repository decodes a
        // large load on several threads, raw on one.
        var cpu: [Implementation: [Double]] = [:]
        var rawCPU: [RawCodec: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                var count = 0
                let seconds: Double
                let cpuStart = processCPUSeconds()
                switch implementation {
                case .raw:
                    // The primary-key scan is already in key (UTF-8 byte) order: the same
                    // sorted [Item] the repository returns.
                    for codec in RawCodec.order(forRepeat: repeatIndex) {
                        let decode: (Data) throws -> Item = switch codec {
                        case .foundation: { try foundationDecoder.decode(Item.self, from: $0) }
                        case .recordJSON: { try recordDecoder.decode(Item.self, from: $0) }
                        }
                        let codecCPUStart = processCPUSeconds()
                        rawSamples[codec, default: []].append(try measure {
                            var items: [Item] = []
                            items.reserveCapacity(n)
                            try raw.forEachRecord { _, payload in items.append(try decode(Data(payload))) }
                            count = items.count
                        })
                        rawCPU[codec, default: []].append(processCPUSeconds() - codecCPUStart)
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
                cpu[implementation, default: []].append(processCPUSeconds() - cpuStart)
            }
        }
        recordTypedRows("T3", n: n, raw: rawSamples, others: samples, naiveNote: "copy of the in-memory dictionary")
        recordTypedRows("T3", n: n, raw: rawCPU, others: cpu, metric: "cpu_s", naiveNote: "copy of the in-memory dictionary")
    }

    // MARK: T4

    private func runTypedItemReads() async throws {
        let n = options.n
        let reads = options.pointReads
        log("T4 typed item(id) reads, N=\(n), \(reads) reads")
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
            let keys = Dataset.randomIndexes(count: reads, below: n, seed: 8_000 + UInt64(repeatIndex)).map(Dataset.key)
            for implementation in order(forRepeat: repeatIndex) {
                var found = 0
                let seconds: Double
                switch implementation {
                case .raw:
                    for codec in RawCodec.order(forRepeat: repeatIndex) {
                        let decode: (Data) throws -> Item = switch codec {
                        case .foundation: { try foundationDecoder.decode(Item.self, from: $0) }
                        case .recordJSON: { try recordDecoder.decode(Item.self, from: $0) }
                        }
                        found = 0
                        rawSamples[codec, default: []].append(try measure {
                            for key in keys {
                                if let data = try raw.value(key: key), try decode(data).id == key { found += 1 }
                            }
                        })
                        guard found == reads else { throw BenchFailure("T4 \(codec.rawValue) found \(found) of \(reads)") }
                    }
                    continue
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
        for codec in RawCodec.allCases {
            let variant = codec.variant()
            let sides: [(Implementation, [Double]?, String?)] = [
                (.raw, rawSamples[codec], codec.note), (.recordKeeper, samples[.recordKeeper], nil),
                (.naive, codec == .foundation ? samples[.naive] : nil, nil),
            ]
            for (implementation, values, note) in sides {
                guard let values else { continue }
                record("T4", variant: variant, n: n, implementation, metric: "time_s", samples: values, count: values.count * reads, note: note)
                record("T4", variant: variant, n: n, implementation, metric: "us_per_read",
                       samples: values.map { $0 / Double(reads) * 1e6 }, count: values.count * reads)
            }
        }
    }
}
