import Foundation
import HarnessSupport
import RecordKeeper

/// W5 and W6 need a fresh process per measurement: the bench re-executes itself with the
/// hidden subcommand `__child MODE --impl I --path P --durability D --n N [--out FILE]`,
/// and the child prints one JSON line of `ChildReport` on stdout.
///
/// Modes:
/// - `open-read`: time from before the store handle is created to after the first point read;
/// - `read`: open and read the whole collection; report peak RSS (VmHWM);
/// - `export`: open and stream every record to a file; report peak RSS;
/// - `write-loop`: W8's writer (`--stop FILE`), see `ConcurrentWorkloads.swift`.
struct ChildReport: Codable, Sendable {
    var seconds: Double
    var records: Int
    /// VmHWM at the end, bytes.
    var peakBytes: Int
    /// VmRSS before the store was touched, bytes.
    var baselineBytes: Int
}

enum ChildMode: String, Sendable {
    case openRead = "open-read"
    case read
    case export
    case writeLoop = "write-loop"
}

/// Writes `key \t payload \n` lines through a 1 MiB buffer.
final class ExportWriter {
    private let handle: FileHandle
    private var buffer = Data()
    private let limit = 1 << 20

    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw BenchFailure("cannot create \(path)")
        }
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        buffer.reserveCapacity(limit + 4096)
    }

    func append(key: String, payload: UnsafeRawBufferPointer) throws {
        buffer.append(contentsOf: key.utf8)
        buffer.append(9)
        buffer.append(contentsOf: payload)
        buffer.append(10)
        if buffer.count >= limit { try flush() }
    }

    func append(key: String, payload: Data) throws {
        try payload.withUnsafeBytes { try append(key: key, payload: $0) }
    }

    func close() throws {
        try flush()
        try handle.close()
    }

    private func flush() throws {
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}

enum Child {
    /// Entry point of `recordkeeper-bench __child ...`; returns the exit code.
    static func main(_ arguments: [String]) async -> Int32 {
        do {
            guard let first = arguments.first, let mode = ChildMode(rawValue: first) else {
                throw BenchFailure("child: unknown mode \(arguments.first ?? "(none)")")
            }
            var values: [String: String] = [:]
            var index = 1
            while index + 1 < arguments.count {
                values[arguments[index]] = arguments[index + 1]
                index += 2
            }
            guard let implementation = values["--impl"].flatMap(Implementation.init(rawValue:)),
                  let path = values["--path"],
                  let n = values["--n"].flatMap({ Int($0) }),
                  let durability = values["--durability"].flatMap(Durability.init(rawValue:)) else {
                throw BenchFailure("child: missing --impl, --path, --n or --durability")
            }
            let report =
                if mode == .writeLoop {
                    try await writeUntilStopped(implementation, path: path, n: n, durability: durability,
                                                stopFile: values["--stop"] ?? "")
                } else {
                    try await run(mode, implementation, path: path, n: n, durability: durability, out: values["--out"])
                }
            let data = try JSONEncoder().encode(report)
            FileHandle.standardOutput.write(data + Data("\n".utf8))
            return 0
        } catch {
            progress("recordkeeper-bench child: \(error)")
            return 1
        }
    }

    private static func run(_ mode: ChildMode, _ implementation: Implementation, path: String, n: Int,
                            durability: Durability, out: String?) async throws -> ChildReport {
        let baseline = ProcessMemory.resident ?? 0
        let url = URL(fileURLWithPath: path)
        let probe = Dataset.key(n / 2)
        var records = 0
        // Each store is kept until the time is taken: its closing (SQLite's and the handle's
        // teardown) is not part of an open and a read, for either side.
        var kept: AnyObject?
        let clock = ContinuousClock()
        let start = clock.now
        switch (mode, implementation) {
        case (.openRead, .raw):
            let store = try RawSQLiteStore(path: path, durability: durability)
            kept = store
            records = try store.value(key: probe) == nil ? 0 : 1
        case (.openRead, .recordKeeper):
            let store = RecordKeeperSide.makeStore(url: url, durability: durability)
            kept = store
            records = try await store.value(benchCollection, key: probe) == nil ? 0 : 1
        case (.openRead, .naive):
            let store = NaiveJSONStore<Item>(fileURL: url)
            kept = store
            records = await store.get(probe) == nil ? 0 : 1

        case (.read, .raw):
            let store = try RawSQLiteStore(path: path, durability: durability)
            kept = store
            records = try store.readAll().count
        case (.read, .recordKeeper):
            let store = RecordKeeperSide.makeStore(url: url, durability: durability)
            kept = store
            records = try await store.read(benchCollection)?.count ?? 0
        case (.read, .naive):
            let store = NaiveJSONStore<Item>(fileURL: url)
            kept = store
            records = await store.getAll().count

        case (.export, .raw):
            let store = try RawSQLiteStore(path: path, durability: durability)
            kept = store
            let writer = try ExportWriter(path: out ?? "/dev/null")
            try store.forEachRecord { key, payload in
                try writer.append(key: key, payload: payload)
                records += 1
            }
            try writer.close()
        case (.export, .recordKeeper):
            let store = RecordKeeperSide.makeStore(url: url, durability: durability)
            kept = store
            let output = out ?? "/dev/null"
            records = try await store.snapshot { snapshot in
                let writer = try ExportWriter(path: output)
                var count = 0
                try snapshot.forEachRecord(in: benchCollection) { record in
                    try writer.append(key: record.key, payload: record.data)
                    count += 1
                }
                try writer.close()
                return count
            }
        case (.export, .naive):
            // The naive store has no streaming: load everything, then encode item by item.
            let store = NaiveJSONStore<Item>(fileURL: url)
            kept = store
            let writer = try ExportWriter(path: out ?? "/dev/null")
            let encoder = Dataset.makeEncoder()
            for item in await store.getAll() {
                try writer.append(key: item.id, payload: try encoder.encode(item))
                records += 1
            }
            try writer.close()
        case (.writeLoop, _):
            throw BenchFailure("child: write-loop runs in writeUntilStopped")
        }
        let seconds = (clock.now - start).seconds
        withExtendedLifetime(kept) {}
        kept = nil
        return ChildReport(seconds: seconds, records: records, peakBytes: ProcessMemory.peakResident ?? 0, baselineBytes: baseline)
    }
}

extension BenchRunner {
    /// The path of this executable, for re-executing it.
    static var executablePath: String {
        #if os(Linux)
            if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        return Bundle.main.executablePath ?? CommandLine.arguments[0]
    }

    func spawnChild(_ mode: ChildMode, _ implementation: Implementation, url: URL, n: Int) throws -> ChildReport {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: Self.executablePath)
        var arguments = ["__child", mode.rawValue, "--impl", implementation.rawValue, "--path", url.path,
                         "--n", String(n), "--durability", options.durability.rawValue]
        if mode == .export {
            arguments += ["--out", directory.appendingPathComponent("bench-export-\(implementation.rawValue).out").path]
        }
        process.arguments = arguments
        let data = try process.runReadingOutput()
        guard process.terminationStatus == 0 else {
            throw BenchFailure("child \(mode.rawValue) \(implementation.rawValue) exited with \(process.terminationStatus)")
        }
        return try JSONDecoder().decode(ChildReport.self, from: data)
    }

    // MARK: W5

    /// Cold open of an existing store plus the first point read, in a fresh process each time
    /// (the OS page cache stays warm; nothing here drops it).
    func runColdOpen() async throws {
        let n = options.n
        log("W5 cold open + first read, N=\(n)")
        var urls: [Implementation: URL] = [:]
        for implementation in options.implementations { urls[implementation] = try await fixture(implementation, n: n) }
        var samples: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                let report = try spawnChild(.openRead, implementation, url: urls[implementation]!, n: n)
                guard report.records == 1 else { throw BenchFailure("W5 \(implementation.rawValue) missed its record") }
                samples[implementation, default: []].append(report.seconds * 1e3)
            }
        }
        for implementation in Implementation.allCases {
            guard let values = samples[implementation] else { continue }
            let note = implementation == .naive ? "loads and decodes the whole file" : nil
            record("W5", n: n, implementation, metric: "time_ms", samples: values, note: note)
        }
    }

    // MARK: W6

    /// Peak resident memory of a child that reads all N records, and of one that exports them.
    func runPeakMemory() async throws {
        let n = options.n
        log("W6 peak memory, N=\(n)")
        var urls: [Implementation: URL] = [:]
        for implementation in options.implementations { urls[implementation] = try await fixture(implementation, n: n) }
        for mode in [ChildMode.read, .export] {
            var peak: [Implementation: [Double]] = [:]
            var growth: [Implementation: [Double]] = [:]
            for repeatIndex in 0..<options.repeats {
                for implementation in order(forRepeat: repeatIndex) {
                    let report = try spawnChild(mode, implementation, url: urls[implementation]!, n: n)
                    guard report.records == n else {
                        throw BenchFailure("W6 \(mode.rawValue) \(implementation.rawValue) saw \(report.records) of \(n)")
                    }
                    peak[implementation, default: []].append(Double(report.peakBytes) / 1_048_576)
                    growth[implementation, default: []].append(Double(report.peakBytes - report.baselineBytes) / 1_048_576)
                }
            }
            for implementation in Implementation.allCases {
                record("W6", variant: mode.rawValue, n: n, implementation, metric: "peak_rss_mb", samples: peak[implementation] ?? [])
                record("W6", variant: mode.rawValue, n: n, implementation, metric: "rss_growth_mb", samples: growth[implementation] ?? [])
            }
        }
    }
}
