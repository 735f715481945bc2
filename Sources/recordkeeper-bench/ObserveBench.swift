import Foundation
import HarnessSupport
import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `recordkeeper-bench observe [--samples S] [--n N] [--repeat R]`: the change-stream rows.
///
/// - **W9**: the delay from another process's commit to this process's stream yielding it.
///   A child process (`__observe-writer`) puts S records, one commit each at random intervals
///   of 5–15 ms, each payload holding `CLOCK_MONOTONIC` (system-wide on Linux) read just before
///   the `put`, so each delay includes the child's commit; this process observes the collection
///   and takes, for each record, the clock when its element arrives. Reports p50 and p99.
/// - **M1**: peak resident memory (VmHWM) of a child process (`__observe-import`) that imports
///   N records in one `replace`, unobserved, and observed by a stream whose consumer reads its
///   first element and then stops reading (the slow consumer of issue 12). Alternating, R
///   repeats each, medians.
enum ObserveBench {
    static func main(_ arguments: [String]) async -> Int32 {
        var values: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            values[arguments[index]] = arguments[index + 1]
            index += 2
        }
        let samples = values["--samples"].flatMap { Int($0) } ?? 300
        let n = values["--n"].flatMap { Int($0) } ?? 1_000_000
        let repeats = values["--repeat"].flatMap { Int($0) } ?? 2
        let puts = values["--puts"].flatMap { Int($0) } ?? 1_000
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("recordkeeper-bench-observe-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { removeScratch(directory) }
            if samples > 0 {
                let delays = try await latency(samples: samples, directory: directory)
                print(String(
                    format: "W9 | other-process commit → stream yield | samples %d | p50_ms %.2f | p99_ms %.2f | max_ms %.2f",
                    delays.count, Stats.percentile(delays, 0.5), Stats.percentile(delays, 0.99), delays.max() ?? .nan))
            }
            if puts > 0 {
                let (plain, observed) = try await writeCost(puts: puts, directory: directory)
                print(String(
                    format: "O2 | single puts (normal) into 10,000 records, p50 | unobserved_us %.1f | observed_us %.1f | ratio %.3f",
                    plain, observed, observed / plain))
            }
            if n > 0 {
                var plain: [(mb: Double, s: Double)] = []
                var observed: [(mb: Double, s: Double)] = []
                for round in 0..<repeats {
                    plain.append(try importPeak(n: n, observe: false, directory: directory, round: round))
                    observed.append(try importPeak(n: n, observe: true, directory: directory, round: round))
                }
                let a = Stats.median(plain.map(\.mb)), b = Stats.median(observed.map(\.mb))
                print(String(
                    format: "M1 | import of %d records, peak RSS | unobserved_mb %.1f | observed_not_consuming_mb %.1f | ratio %.3f",
                    n, a, b, b / a))
                let ta = Stats.median(plain.map(\.s)), tb = Stats.median(observed.map(\.s))
                print(String(
                    format: "M1 | import of %d records, time of the replace | unobserved_s %.2f | observed_s %.2f | ratio %.3f",
                    n, ta, tb, tb / ta))
            }
            return 0
        } catch {
            progress("recordkeeper-bench observe: \(error)")
            return 1
        }
    }

    private static func removeScratch(_ directory: URL) {
        do { try FileManager.default.removeItem(at: directory) } catch {
            progress("recordkeeper-bench observe: could not remove \(directory.path): \(error)")
        }
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    // MARK: W9

    static func latency(samples: Int, directory: URL) async throws -> [Double] {
        let url = directory.appendingPathComponent("latency.sqlite")
        let store = RecordStore(url: url, options: .init(durability: .normal))
        try await store.put("setup", key: "open", data: Data())
        var iterator = await store.changes(in: "latency").makeAsyncIterator()
        let child = try spawn(["__observe-writer", "--path", url.path, "--samples", String(samples)])
        var delays: [Double] = []
        while delays.count < samples, let change = await iterator.next() {
            let now = monotonicNanoseconds()
            for payload in change.upserts.values where payload.count == 8 {
                let sent = payload.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                delays.append(Double(now &- sent) / 1e6)
            }
        }
        child.waitUntilExit()
        guard child.terminationStatus == 0 else { throw BenchFailure("observe writer exited with \(child.terminationStatus)") }
        return delays
    }

    /// The child of W9: `samples` puts at random intervals, each payload the clock before it.
    static func writer(path: String, samples: Int) async throws {
        let store = RecordStore(url: URL(fileURLWithPath: path), options: .init(durability: .normal))
        var random = SplitMix64(seed: 9)
        for number in 0..<samples {
            try await Task.sleep(for: .microseconds(5_000 + Int.random(in: 0..<10_000, using: &random)))
            var stamp = monotonicNanoseconds()
            try await store.put("latency", key: "s\(number)", data: Data(bytes: &stamp, count: 8))
        }
    }

    // MARK: O2

    /// p50 of single puts with no stream anywhere, and while another store on the file has a
    /// stream (so every put logs); 3 alternating rounds of `puts` each, medians of the p50s.
    private static func writeCost(puts: Int, directory: URL) async throws -> (Double, Double) {
        let url = directory.appendingPathComponent("write-cost.sqlite")
        let store = RecordStore(url: url, options: .init(durability: .normal))
        try await store.replace("items", values: try Dataset.payloads(count: 10_000))
        var plain: [Double] = []
        var observed: [Double] = []
        var revision = 0
        for _ in 0..<3 {
            for observe in [false, true] {
                let observer = RecordStore(url: url)
                let stream: AsyncStream<RecordChanges>? = observe ? await observer.changes(in: "items") : nil
                var times: [Double] = []
                let clock = ContinuousClock()
                for index in 0..<puts {
                    revision += 1
                    let data = Data("{\"revision\":\(revision)}".utf8)
                    let start = clock.now
                    try await store.put("items", key: Dataset.key(index * 7 % 10_000), data: data)
                    times.append((clock.now - start).seconds * 1e6)
                }
                withExtendedLifetime(stream) {}
                if observe { observed.append(Stats.median(times)) } else { plain.append(Stats.median(times)) }
            }
        }
        return (Stats.median(plain), Stats.median(observed))
    }

    // MARK: M1

    private static func importPeak(n: Int, observe: Bool, directory: URL, round: Int) throws -> (mb: Double, s: Double) {
        let url = directory.appendingPathComponent("import-\(observe)-\(round).sqlite")
        let process = try spawn(["__observe-import", "--path", url.path, "--n", String(n), "--observe", observe ? "1" : "0"],
                                output: true)
        let data = (process.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let fields = String(data: data, encoding: .utf8)?.split(whereSeparator: \.isWhitespace),
              fields.count == 2, let bytes = Double(fields[0]), let seconds = Double(fields[1]) else {
            throw BenchFailure("observe import child exited with \(process.terminationStatus)")
        }
        return (bytes / 1_048_576, seconds)
    }

    /// The child of M1: imports `n` records; prints its peak RSS in bytes.
    static func importer(path: String, n: Int, observe: Bool) async throws {
        let store = RecordStore(url: URL(fileURLWithPath: path), options: .init(durability: .normal))
        try await store.put("setup", key: "open", data: Data())
        var consumer: Task<Int, Never>?
        if observe {
            let stream = await store.changes(in: "items")
            consumer = Task {
                // Reads one element, then keeps the stream without reading it.
                var iterator = stream.makeAsyncIterator()
                let first = await iterator.next()?.count ?? 0
                while !Task.isCancelled {
                    do { try await Task.sleep(for: .milliseconds(20)) } catch { break }
                }
                withExtendedLifetime(iterator) {}
                return first
            }
        }
        let values = try Dataset.payloads(count: n)
        let start = ContinuousClock.now
        try await store.replace("items", values: values)
        let seconds = (ContinuousClock.now - start).seconds
        try await store.put("items", key: "after-import", data: Data("1".utf8))
        if let consumer {
            // Give the watcher time to deliver the first element and hear of the later commit.
            try await Task.sleep(for: .milliseconds(300))
            consumer.cancel()
            let first = await consumer.value
            guard first > 0 else { throw BenchFailure("the observer received nothing") }
        }
        print(ProcessMemory.peakResident ?? 0, seconds)
    }

    private static func spawn(_ arguments: [String], output: Bool = false) throws -> SpawnedProcess {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: BenchRunner.executablePath)
        process.arguments = arguments
        if output { process.standardOutput = Pipe() }
        try process.run()
        return process
    }

    /// Entry of the `__observe-*` children; returns the exit code.
    static func child(_ mode: String, _ arguments: [String]) async -> Int32 {
        var values: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            values[arguments[index]] = arguments[index + 1]
            index += 2
        }
        do {
            guard let path = values["--path"] else { throw BenchFailure("\(mode): --path is required") }
            switch mode {
            case "__observe-writer":
                try await writer(path: path, samples: values["--samples"].flatMap { Int($0) } ?? 300)
            case "__observe-import":
                try await importer(path: path, n: values["--n"].flatMap { Int($0) } ?? 1_000_000,
                                   observe: values["--observe"] == "1")
            default:
                throw BenchFailure("unknown mode \(mode)")
            }
            return 0
        } catch {
            progress("recordkeeper-bench \(mode): \(error)")
            return 1
        }
    }
}

extension BenchRunner {
    /// W9: p50 and p99 of the delay from another process's commit to the stream's element
    /// (RecordKeeper only: raw SQLite has no change streams).
    func runObserveLatency() async throws {
        let samples = options.quick ? 50 : 300
        log("W9 change-stream latency from another process, \(samples) commits")
        let delays = try await ObserveBench.latency(samples: samples, directory: directory)
        let note = "child process puts one record per commit every 5-15 ms; delay includes its commit"
        for (metric, fraction) in [("p50_ms", 0.5), ("p99_ms", 0.99)] {
            appendRows([ResultRow(
                workload: "W9", variant: "", n: samples, implementation: Implementation.recordKeeper.rawValue,
                metric: metric, value: Stats.percentile(delays, fraction), ratioToRaw: nil,
                samples: delays.count, note: note)])
        }
    }
}
