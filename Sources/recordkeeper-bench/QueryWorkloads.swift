import Foundation
import RecordKeeper

/// The item of Q1/Q2: a numeric, date-like `at` (milliseconds since 1970) that queries sort
/// and filter by, declared once as a query field.
struct Entry: Codable, Sendable, Identifiable, Equatable, Queryable {
    var id: String
    var title: String
    var count: Int
    var at: Int

    static let at = Field<Entry, Int>("at")
    static let queryFields: [any QueryField] = [at]

    /// Item `index` of N: `at` is a permutation of the indexes (times 1,000 ms), so key order
    /// and `at` order differ.
    static func make(_ index: Int, n: Int) -> Entry {
        Entry(id: Dataset.key(index), title: "Entry \(index) of the bench collection", count: index &* 7,
              at: baseAt + ((index &* 7_919) % n) * 1_000)
    }

    static let baseAt = 1_780_000_000_000
    static let collection = "entries"
}

/// Q1–Q3 (issue 23): queries through declared indexes against raw SQLite running the same SQL
/// (the same JSON payloads, the same `json_extract` expression index, the same statement shape
/// and the repository's decoder, `RecordJSONDecoder`), against today's load-all-then-filter,
/// and what two declared indexes add to a single save.
extension BenchRunner {
    /// Queries per side per repeat in Q1/Q2, alternating sides query by query.
    private var queriesPerRepeat: Int { options.quick ? 50 : 500 }

    /// The Q1/Q2 stores of N entries, built once (untimed): a RecordKeeper store written
    /// through `RecordRepository<Entry>` with `at` declared, and a raw store holding the same
    /// payload bytes with the same expression index.
    private func queryStores(n: Int) async throws -> (RawSQLiteStore, RecordRepository<Entry>) {
        let rawURL = storeURL(.raw, purpose: "q", n: n)
        let rkURL = storeURL(.recordKeeper, purpose: "q", n: n)
        if queryFixtureN != n {
            let entries = (0..<n).map { Entry.make($0, n: n) }
            log("building Q1/Q2 stores with N=\(n)")
            removeStore(rawURL)
            removeStore(rkURL)
            let raw = try RawSQLiteStore(path: rawURL.path, durability: .normal)
            let encoder = RecordCoding.makeEncoder()
            var values: [String: Data] = [:]
            for entry in entries { values[entry.id] = try encoder.encode(entry) }
            try raw.insertAll(values)
            try raw.createFieldIndex("at")
            let building = RecordKeeperSide.makeStore(url: rkURL, durability: .normal)
            let repository = RecordRepository<Entry>(store: building, collection: Entry.collection)
            try await repository.save(entries)
            try await repository.declareIndexes([Entry.at])
            await building.close()
            queryFixtureN = n
        }
        let raw = try RawSQLiteStore(path: rawURL.path, durability: options.durability)
        let store = try await RecordKeeperSide.open(url: rkURL, durability: options.durability)
        let repository = RecordRepository<Entry>(store: store, collection: Entry.collection)
        let plan = try await store.queryPlan(Entry.collection, RecordQuery(orderBy: [RecordField("at").descending], limit: 20))
        guard plan.contains(where: { $0.contains("USING INDEX declared_") }) else {
            throw BenchFailure("Q1 RecordKeeper does not use the declared index: \(plan)")
        }
        return (raw, repository)
    }

    // MARK: Q1

    func runNewestQuery() async throws {
        let n = options.n
        let limit = 20
        log("Q1 the \(limit) newest entries by indexed at, N=\(n)")
        let (raw, repository) = try await queryStores(n: n)
        // The repository's codec (`RecordCoding.Implementation.recordJSON`, its default), one instance
        // reused as the repository reuses its own, so both sides decode alike.
        let decoder = RecordJSONDecoder()
        func rawNewest() throws -> [Entry] {
            var entries: [Entry] = []
            entries.reserveCapacity(limit)
            try raw.newest(by: "at", limit: limit) { payload in
                entries.append(try decoder.decode(Entry.self, from: Data(payload)))
            }
            return entries
        }
        func loadAllNewest() async throws -> [Entry] {
            let all = try await repository.load()
            return Array(all.sorted { ($0.at, $0.id) > ($1.at, $1.id) }.prefix(limit))
        }
        // The three answer the same, checked once before timing.
        let expected = try rawNewest()
        guard expected.count == min(limit, n),
            try await repository.query(orderBy: [Entry.at.descending], limit: limit).elements == expected,
            try await loadAllNewest() == expected
        else { throw BenchFailure("Q1 the three sides disagree on the \(limit) newest entries") }

        var perQuery: [Implementation: [Double]] = [:]
        var loadAll: [Double] = []
        for repeatIndex in 0..<options.repeats {
            var rawTimes: [Double] = [], rkTimes: [Double] = []
            // The whole-collection load runs first in even repeats and last in odd ones.
            if repeatIndex % 2 == 0 { loadAll.append(try await measureAsync { _ = try await loadAllNewest() }) }
            for number in 0..<queriesPerRepeat {
                let rawFirst = (number + repeatIndex) % 2 == 0
                for side in rawFirst ? [Implementation.raw, .recordKeeper] : [.recordKeeper, .raw] {
                    if side == .raw {
                        rawTimes.append(try measure { _ = try rawNewest() })
                    } else {
                        rkTimes.append(try await measureAsync {
                            _ = try await repository.query(orderBy: [Entry.at.descending], limit: limit)
                        })
                    }
                }
            }
            if repeatIndex % 2 == 1 { loadAll.append(try await measureAsync { _ = try await loadAllNewest() }) }
            perQuery[.raw, default: []].append(Stats.percentile(rawTimes, 0.5) * 1e6)
            perQuery[.recordKeeper, default: []].append(Stats.percentile(rkTimes, 0.5) * 1e6)
        }
        let count = queriesPerRepeat * options.repeats
        record("Q1", variant: "query", n: n, .raw, metric: "p50_us", samples: perQuery[.raw] ?? [], count: count)
        record("Q1", variant: "query", n: n, .recordKeeper, metric: "p50_us", samples: perQuery[.recordKeeper] ?? [], count: count)
        let speedup = Stats.median(loadAll) * 1e6 / Stats.median(perQuery[.recordKeeper] ?? [])
        record("Q1", variant: "load-all+filter", n: n, .recordKeeper, metric: "p50_us", samples: loadAll.map { $0 * 1e6 },
               note: "load-all+filter: repository.load() then sort and take 20; "
                   + String(format: "%.0fx the p50 of the indexed query", speedup))
    }

    // MARK: Q2

    func runRangeCount() async throws {
        let n = options.n
        // `at` runs over the N values baseAt + i * 1,000 (i < N): this range holds a tenth of them.
        let first = n / 3, width = max(1, n / 10)
        let lower = Entry.baseAt + first * 1_000, upper = Entry.baseAt + (first + width - 1) * 1_000
        log("Q2 count of \(width) of N=\(n) by an indexed range")
        let (raw, repository) = try await queryStores(n: n)
        let expected = try raw.count(where: "at", between: lower, and: upper)
        guard expected > 0, try await repository.count(where: Entry.at.between(lower, upper)) == expected else {
            throw BenchFailure("Q2 raw and RecordKeeper disagree on the count (raw \(expected))")
        }
        var perQuery: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            var rawTimes: [Double] = [], rkTimes: [Double] = []
            for number in 0..<queriesPerRepeat {
                let rawFirst = (number + repeatIndex) % 2 == 0
                for side in rawFirst ? [Implementation.raw, .recordKeeper] : [.recordKeeper, .raw] {
                    if side == .raw {
                        rawTimes.append(try measure { _ = try raw.count(where: "at", between: lower, and: upper) })
                    } else {
                        rkTimes.append(try await measureAsync { _ = try await repository.count(where: Entry.at.between(lower, upper)) })
                    }
                }
            }
            perQuery[.raw, default: []].append(Stats.percentile(rawTimes, 0.5) * 1e6)
            perQuery[.recordKeeper, default: []].append(Stats.percentile(rkTimes, 0.5) * 1e6)
        }
        let count = queriesPerRepeat * options.repeats
        let note = "count of \(expected) records"
        record("Q2", variant: "count", n: n, .raw, metric: "p50_us", samples: perQuery[.raw] ?? [], count: count, note: note)
        record("Q2", variant: "count", n: n, .recordKeeper, metric: "p50_us", samples: perQuery[.recordKeeper] ?? [], count: count)
    }

    // MARK: Q3

    /// W2's single saves (`put`, one commit each, the bench's Item payloads) into two
    /// collections of one store holding N records each, one with declared indexes on
    /// `updated` and `count` (both change with every save), one without, alternating
    /// collection save by save.
    func runSavesWithIndexes() async throws {
        let n = options.n
        let durability = options.durability
        log("Q3 single saves with two declared indexes vs none, N=\(n), durability \(durability.rawValue)")
        let url = storeURL(.recordKeeper, purpose: "q3", n: n)
        removeStore(url)
        defer { removeStore(url) }
        let plain = "plain", indexed = "indexed"
        let building = RecordKeeperSide.makeStore(url: url, durability: .normal)
        try await building.replace(plain, values: try payloads(n: n))
        try await building.replace(indexed, values: try payloads(n: n))
        _ = try await building.declareIndex(indexed, on: FieldPath("updated"))
        _ = try await building.declareIndex(indexed, on: FieldPath("count"))
        await building.close()
        let store = try await RecordKeeperSide.open(url: url, durability: durability)
        guard try await store.declaredIndexes(indexed).count == 2 else { throw BenchFailure("Q3 indexes not declared") }
        let encoder = Dataset.makeEncoder()
        var p50: [Bool: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            let indexes = Dataset.randomIndexes(count: options.upserts * 2, below: n, seed: 9_000 + UInt64(repeatIndex))
            var none: [Double] = [], two: [Double] = []
            for (number, index) in indexes.enumerated() {
                let item = Dataset.item(index, revision: nextRevision())
                let data = try encoder.encode(item)
                if number % 2 == repeatIndex % 2 {
                    none.append(try await measureAsync { try await store.put(plain, key: item.id, data: data) })
                } else {
                    two.append(try await measureAsync { try await store.put(indexed, key: item.id, data: data) })
                }
            }
            p50[false, default: []].append(Stats.percentile(none, 0.5) * 1e6)
            p50[true, default: []].append(Stats.percentile(two, 0.5) * 1e6)
        }
        await store.close()
        let ratio = Stats.median(p50[true] ?? []) / Stats.median(p50[false] ?? [])
        let count = options.upserts * options.repeats
        record("Q3", variant: "\(durability.rawValue) no index", n: n, .recordKeeper, metric: "p50_us",
               samples: p50[false] ?? [], count: count)
        record("Q3", variant: "\(durability.rawValue) 2 indexes", n: n, .recordKeeper, metric: "p50_us",
               samples: p50[true] ?? [], count: count,
               note: "\(durability.rawValue) 2 indexes: " + String(format: "%.2fx the p50 without", ratio))
        try await runRawSavesWithIndexes(n: n, durability: durability)
    }

    /// Q3's physical floor: the same saves through the SQLite C API into two raw stores of N
    /// records, one with the same two expression indexes, alternating store save by save.
    private func runRawSavesWithIndexes(n: Int, durability: Durability) async throws {
        guard options.implementations.contains(.raw) else { return }
        let plainURL = storeURL(.raw, purpose: "q3-plain", n: n), indexedURL = storeURL(.raw, purpose: "q3-indexed", n: n)
        defer { removeStore(plainURL); removeStore(indexedURL) }
        var stores: [RawSQLiteStore] = []
        for url in [plainURL, indexedURL] {
            removeStore(url)
            let store = try RawSQLiteStore(path: url.path, durability: durability)
            try store.insertAll(try payloads(n: n))
            stores.append(store)
        }
        try stores[1].createFieldIndex("updated")
        try stores[1].createFieldIndex("count")
        let encoder = Dataset.makeEncoder()
        var p50: [Bool: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            let indexes = Dataset.randomIndexes(count: options.upserts * 2, below: n, seed: 9_500 + UInt64(repeatIndex))
            var times: [Bool: [Double]] = [:]
            for (number, index) in indexes.enumerated() {
                let item = Dataset.item(index, revision: nextRevision())
                let data = try encoder.encode(item)
                let indexed = number % 2 != repeatIndex % 2
                times[indexed, default: []].append(try measure { try stores[indexed ? 1 : 0].put(key: item.id, data: data) })
            }
            for (indexed, samples) in times { p50[indexed, default: []].append(Stats.percentile(samples, 0.5) * 1e6) }
        }
        let ratio = Stats.median(p50[true] ?? []) / Stats.median(p50[false] ?? [])
        let count = options.upserts * options.repeats
        record("Q3", variant: "\(durability.rawValue) no index", n: n, .raw, metric: "p50_us", samples: p50[false] ?? [], count: count)
        record("Q3", variant: "\(durability.rawValue) 2 indexes", n: n, .raw, metric: "p50_us", samples: p50[true] ?? [], count: count,
               note: "\(durability.rawValue) 2 indexes: " + String(format: "%.2fx the p50 without", ratio))
    }
}
