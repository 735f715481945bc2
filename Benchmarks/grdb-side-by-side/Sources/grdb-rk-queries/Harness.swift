import Foundation
import GRDB
import RecordKeeper

// The few pieces of the GRDB side-by-side harness (`grdb-rk-bench`, see README.md) that
// QueryWorkloads.swift uses, cut down to Q1/Q2, so that file is the same in the harness and
// here. Same names and same behaviour as the harness's Runner, Recorder, Report, GRDBSide,
// RKSide and Dataset.

@main
enum Main {
    static func main() async {
        let options: Options
        do {
            options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            progress("\(error)")
            exit(64)
        }
        exit(await runBench(options))
    }
}

/// Off the main actor, like an ordinary async caller.
func runBench(_ options: Options) async -> Int32 {
    let startDate = Date(), loadAtStart = loadAverage()
    let runner: Runner
    do { runner = try Runner(options: options) } catch {
        progress("grdb-rk-queries: cannot create the scratch directory: \(error)")
        return 1
    }
    defer { runner.cleanUp() }
    #if DEBUG
    let configuration = "debug"
    progress("[bench] warning: debug build; build with -c release for real figures")
    #else
    let configuration = "release"
    #endif
    do {
        if options.workloads.contains("Q1") { try await runner.runQ1() }
        if options.workloads.contains("Q2") { try await runner.runQ2() }
    } catch {
        progress("grdb-rk-queries: \(error)")
        return 1
    }
    let header = """
    grdb-rk-queries: GRDB.swift vs RecordKeeper, Q1/Q2, one process, alternating query by query
    date (start)       \(ISO8601DateFormatter().string(from: startDate))
    configuration      \(configuration); N=\(options.n); repeats=\(options.repeats); queries/repeat=\(options.queries)
    cores              \(ProcessInfo.processInfo.activeProcessorCount)
    load average       start \(loadAtStart); end \(loadAverage())
    ratio              median(RecordKeeper) / median(GRDB): below 1 = RecordKeeper faster

    """
    let output = header + "\n" + Report.table(runner.recorder)
    print(output, terminator: "")
    if let path = options.output {
        do { try output.write(toFile: path, atomically: true, encoding: .utf8) } catch {
            progress("grdb-rk-queries: cannot write \(path): \(error)")
            return 1
        }
    }
    return 0
}

struct Options: Sendable {
    var n = 100_000
    var repeats = 7
    /// Queries per side per repeat.
    var queries = 200
    var directory: String?
    var output: String?
    var workloads: Set<String> = ["Q1", "Q2"]

    static let usage = "usage: grdb-rk-queries [--n N] [--repeat R] [--queries K] [--dir DIR] [--output FILE] [--workloads Q1,Q2]"

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value() throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchFailure("missing value after \(arguments[index - 1])\n" + usage) }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--n": options.n = Int(try value()) ?? options.n
            case "--repeat": options.repeats = Int(try value()) ?? options.repeats
            case "--queries": options.queries = Int(try value()) ?? options.queries
            case "--dir": options.directory = try value()
            case "--output": options.output = try value()
            case "--workloads": options.workloads = Set(try value().split(separator: ",").map { $0.uppercased() })
            default: throw BenchFailure("unknown argument \(arguments[index])\n" + usage)
            }
            index += 1
        }
        return options
    }
}

/// Drives the workloads, sequentially, from one task.
final class Runner {
    let options: Options
    let directory: URL
    let recorder = Recorder()

    init(options: Options) throws {
        self.options = options
        directory = options.directory.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "grdb-rk-queries-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func removeStore(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    /// Implementations in the order of repeat `index`: rotated, so none always goes first.
    func order(_ impls: [Impl], repeat index: Int) -> [Impl] {
        let shift = index % impls.count
        return Array(impls[shift...] + impls[..<shift])
    }
}

enum Impl: String, Sendable, CaseIterable {
    case grdb = "GRDB"
    case rk = "RecordKeeper"
}

/// Per-repeat samples of one metric of one workload, in the order workloads report them.
final class Recorder {
    private(set) var series: [(workload: String, metric: String, note: String, samples: [Impl: [Double]])] = []

    func add(_ workload: String, _ metric: String, _ impl: Impl, _ value: Double, note: String = "") {
        if let index = series.firstIndex(where: { $0.workload == workload && $0.metric == metric }) {
            series[index].samples[impl, default: []].append(value)
        } else {
            series.append((workload, metric, note, [impl: [value]]))
        }
    }
}

enum Report {
    /// One line per workload: medians [min, max] of the repeats, the ratio of medians
    /// RecordKeeper / GRDB and the range of the per-repeat ratios; then every sample.
    static func table(_ recorder: Recorder) -> String {
        func cell(_ values: [Double]) -> String {
            String(format: "%.1f [%.1f, %.1f]", Stats.median(values), values.min() ?? .nan, values.max() ?? .nan)
        }
        var lines = ["workload  metric   GRDB median [min, max]     RecordKeeper median [min, max]   RK/GRDB  per-repeat range"]
        for series in recorder.series {
            let grdb = series.samples[.grdb] ?? [], rk = series.samples[.rk] ?? []
            let ratios = zip(rk, grdb).map { $0 / $1 }
            lines.append([series.workload, series.metric, cell(grdb), cell(rk),
                          String(format: "%.2f", Stats.median(rk) / Stats.median(grdb)),
                          String(format: "%.2f – %.2f", ratios.min() ?? .nan, ratios.max() ?? .nan),
                          "(\(series.note))"].joined(separator: "  "))
        }
        lines.append("\nper-repeat samples (in repeat order):")
        for series in recorder.series {
            for impl in Impl.allCases {
                let values = (series.samples[impl] ?? []).map { String(format: "%.1f", $0) }
                lines.append("\(series.workload) \(series.metric) \(impl.rawValue): " + values.joined(separator: " "))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

enum Stats {
    static func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

    /// Percentile with linear interpolation between closest ranks; `fraction` in 0...1.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let position = fraction * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down)), upper = min(lower + 1, sorted.count - 1)
        let weight = position - Double(lower)
        return sorted[lower] * (1 - weight) + sorted[upper] * weight
    }
}

/// Times one asynchronous block, in seconds.
func measureAsync(_ body: () async throws -> Void) async rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try await body()
    let elapsed = (clock.now - start).components
    return Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
}

/// The machine's load averages (1, 5, 15 min), where the system publishes them.
func loadAverage() -> String {
    #if os(Linux)
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "n/a" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
    #else
    return "n/a"
    #endif
}

func progress(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// A failed sanity check of the bench itself.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The GRDB side: one `DatabaseQueue` per file, `journalMode = .wal` (GRDB then sets
/// `synchronous = NORMAL`; both read back by `checkSettings`).
enum GRDBSide {
    static func open(path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.journalMode = .wal
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    static func checkSettings(_ queue: DatabaseQueue) throws {
        let (mode, synchronous) = try queue.read { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA synchronous"))
        }
        guard mode == "wal", synchronous == 1 else {
            throw BenchFailure("GRDB connection has journal_mode=\(mode ?? "nil") synchronous=\(synchronous ?? -1)")
        }
    }
}

/// The RecordKeeper side: durability `.normal` (WAL, synchronous NORMAL).
enum RKSide {
    static func makeStore(path: String) -> RecordStore {
        RecordStore(url: URL(fileURLWithPath: path), options: RecordStore.Options(durability: .normal))
    }
}

enum Dataset {
    /// `k` followed by the index zero-padded to six digits.
    static func key(_ index: Int) -> String {
        let digits = String(index)
        return digits.count >= 6 ? "k" + digits : "k" + String(repeating: "0", count: 6 - digits.count) + digits
    }
}
