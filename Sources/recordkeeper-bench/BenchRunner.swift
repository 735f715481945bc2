import Foundation
import RecordKeeper

/// Drives the workloads: owns the scratch directory, the populated fixture stores and the
/// collected results. Not Sendable: used by the one task that runs the bench, sequentially.
final class BenchRunner {
    let options: BenchOptions
    let directory: URL
    private let ownsDirectory: Bool
    private(set) var rows: [ResultRow] = []
    /// Fixture stores already populated, by "implementation|N".
    private var fixtures: Set<String> = []
    private var payloadCache: (n: Int, values: [String: Data])?
    private var revisionCounter = 0
    /// N of the Q1/Q2 stores already built (`QueryWorkloads.swift`).
    var queryFixtureN: Int?

    init(options: BenchOptions) throws {
        self.options = options
        if let path = options.directory {
            directory = URL(fileURLWithPath: path, isDirectory: true)
            ownsDirectory = false
        } else {
            directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("recordkeeper-bench-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true)
            ownsDirectory = true
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// Removes the scratch directory unless `--keep` (or a `--dir` given by the caller).
    func cleanUp() {
        guard !options.keepFiles else { return }
        if ownsDirectory {
            try? FileManager.default.removeItem(at: directory)
        } else {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names where name.hasPrefix("bench-") {
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
            }
        }
    }

    func log(_ message: String) {
        if options.verbose { progress("[bench] " + message) }
    }

    // MARK: Files

    func storeURL(_ implementation: Implementation, purpose: String, n: Int) -> URL {
        let suffix = implementation == .naive ? "json" : "sqlite"
        let name = implementation == .recordKeeper ? "rk" : implementation.rawValue
        return directory.appendingPathComponent("bench-\(name)-\(purpose)-\(n).\(suffix)")
    }

    /// Deletes a store and its SQLite side files.
    func removeStore(_ url: URL) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
    }

    /// Payloads of N records (encoded once, cached for the last N asked for).
    func payloads(n: Int) throws -> [String: Data] {
        if let cache = payloadCache, cache.n == n { return cache.values }
        payloadCache = nil
        let values = try Dataset.payloads(count: n)
        payloadCache = (n, values)
        return values
    }

    /// A store of `implementation` holding N records, built once (untimed) and then reused.
    func fixture(_ implementation: Implementation, n: Int) async throws -> URL {
        let url = storeURL(implementation, purpose: "fixture", n: n)
        let id = "\(implementation.rawValue)|\(n)"
        if fixtures.contains(id) { return url }
        removeStore(url)
        log("building \(implementation.rawValue) fixture with N=\(n)")
        switch implementation {
        case .raw:
            let store = try RawSQLiteStore(path: url.path, durability: .normal)
            try store.insertAll(try payloads(n: n))
            guard try store.count() == n else { throw BenchFailure("raw fixture has the wrong count") }
        case .recordKeeper:
            let store = RecordKeeperSide.makeStore(url: url, durability: .normal)
            try await store.replace(benchCollection, values: try payloads(n: n))
            guard try await store.read(benchCollection)?.count == n else {
                throw BenchFailure("RecordKeeper fixture has the wrong count")
            }
        case .naive:
            let store = NaiveJSONStore<Item>(fileURL: url)
            try await store.saveAll(Dataset.items(count: n))
        }
        fixtures.insert(id)
        return url
    }

    /// Forgets (and deletes) the fixtures of size N, e.g. after the W7 curve has moved on.
    func dropFixtures(n: Int) {
        for implementation in Implementation.allCases {
            fixtures.remove("\(implementation.rawValue)|\(n)")
            removeStore(storeURL(implementation, purpose: "fixture", n: n))
        }
        if payloadCache?.n == n { payloadCache = nil }
    }

    /// The implementations to run in repeat `index` (rotated; filtered by `--impls`).
    func order(forRepeat index: Int) -> [Implementation] {
        Implementation.order(forRepeat: index).filter { options.implementations.contains($0) }
    }

    /// A payload revision not used before in this run, so every upsert changes bytes.
    func nextRevision() -> Int {
        revisionCounter += 1
        return revisionCounter
    }

    // MARK: Results

    /// Records the median of `samples` as one row.
    func record(_ workload: String, variant: String = "", n: Int, _ implementation: Implementation,
                metric: String, samples: [Double], count: Int? = nil, note: String? = nil) {
        guard !samples.isEmpty else { return }
        rows.append(ResultRow(workload: workload, variant: variant, n: n, implementation: implementation.rawValue,
                              metric: metric, value: Stats.median(samples), ratioToRaw: nil,
                              samples: count ?? samples.count, note: note))
    }

    /// The note on a `full`-durability single-save row: its latency is one `fsync` of the log
    /// per commit, so its ratio to raw says how steady this machine's disk was, not what the
    /// library costs (the CPU it adds is the `normal` row's).
    func fsyncNote(_ durability: Durability) -> String? {
        durability == .full
            ? "full: each commit waits for an fsync, so the ratio is this disk's fsync noise (raw alternates in every repeat); read the normal row for the library's cost"
            : nil
    }

    func appendRows(_ newRows: [ResultRow]) {
        rows.append(contentsOf: newRows)
    }
}

/// A failed sanity check of the bench itself (wrong counts, missing records).
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The RecordKeeper side of every comparison, through the byte API of `RecordStore`.
enum RecordKeeperSide {
    static func makeStore(url: URL, durability: Durability) -> RecordStore {
        RecordStore(url: url, options: RecordStore.Options(durability: durability))
    }

    /// Creates the store handle and forces the (lazy) opening of both its connections, so
    /// measurements exclude it: a read opens the reader, an empty write transaction (which
    /// creates the store if needed and changes nothing else) the writer.
    static func open(url: URL, durability: Durability) async throws -> RecordStore {
        let store = makeStore(url: url, durability: durability)
        _ = try await store.value(benchCollection, key: Dataset.key(0))
        try await store.write { _ in }
        return store
    }

    /// Waits until the store has run what earlier requests scheduled on its executor (a
    /// passive checkpoint after a commit that grew the log past its threshold): an empty write
    /// transaction runs there, after it. W2/T2 count this in their wall-clock throughput,
    /// as raw's checkpoints run inside its commits.
    static func drainScheduledWork(_ store: RecordStore) async throws {
        try await store.write { _ in }
    }
}
