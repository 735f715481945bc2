import Foundation
import HarnessSupport
import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// W8: point reads while another process commits.
///
/// The first W8 held one write transaction open, uncommitted, in the bench's own process. That
/// measured no contention: the reads' snapshot never changed, and SQLite's shared-memory locks
/// are counted per process, so a writer connection in the same process let the raw reader take
/// its read lock without a system call (raw got faster than W4). Now a child process (the bench
/// re-executed, `__child write-loop`) commits single saves of existing keys into the same file,
/// one about every 100 µs, through the side's own API (raw SQLite into the raw file, a
/// `RecordStore` into the store), while this process reads: every read transaction meets a log
/// that grew since the last one, and takes its locks against another process.
extension BenchRunner {
    /// `options.pointReads` random point reads of existing keys while the child writes.
    func runPointReadsBesideWriter() async throws {
        let n = options.n
        let reads = options.pointReads
        log("W8 point reads while another process commits, N=\(n), \(reads) reads")
        let rawURL = try await fixture(.raw, n: n)
        let rkURL = try await fixture(.recordKeeper, n: n)
        let raw = try RawSQLiteStore(path: rawURL.path, durability: options.durability)
        let rk = try await RecordKeeperSide.open(url: rkURL, durability: options.durability)
        _ = try raw.readAll()
        _ = try await rk.read(benchCollection)

        var samples: [Implementation: [Double]] = [:]
        var writerRates: [Implementation: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            let keys = Dataset.randomIndexes(count: reads, below: n, seed: 8_000 + UInt64(repeatIndex)).map(Dataset.key)
            for implementation in order(forRepeat: repeatIndex) where implementation != .naive {
                let url = implementation == .raw ? rawURL : rkURL
                let writer = try WriterChild(implementation, url: url, n: n, durability: options.durability, runner: self)
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
                    continue
                }
                let report = try writer.stop()
                guard found == reads else { throw BenchFailure("W8 \(implementation.rawValue) found \(found) of \(reads)") }
                samples[implementation, default: []].append(seconds)
                writerRates[implementation, default: []].append(Double(report.records) / report.seconds)
            }
        }
        for implementation in Implementation.allCases {
            guard let values = samples[implementation] else { continue }
            let rate = Int(Stats.median(writerRates[implementation] ?? [0]))
            record("W8", n: n, implementation, metric: "time_s", samples: values, count: values.count * reads)
            record("W8", n: n, implementation, metric: "us_per_read", samples: values.map { $0 / Double(reads) * 1e6 },
                   count: values.count * reads, note: "another process committed \(rate) single saves/s meanwhile")
        }
    }
}

/// W8's writer: a child process that commits single saves into one side's file until told to stop.
private struct WriterChild {
    let process: SpawnedProcess
    let output: FileHandle
    let stopFile: String

    /// Starts the child and returns once it has committed its first save.
    init(_ implementation: Implementation, url: URL, n: Int, durability: Durability, runner: BenchRunner) throws {
        stopFile = runner.directory.appendingPathComponent("bench-w8-stop").path
        unlink(stopFile)
        process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: BenchRunner.executablePath)
        process.arguments = ["__child", ChildMode.writeLoop.rawValue, "--impl", implementation.rawValue,
                             "--path", url.path, "--n", String(n), "--durability", durability.rawValue,
                             "--stop", stopFile]
        let pipe = Pipe()
        process.standardOutput = pipe
        output = pipe.fileHandleForReading
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.availableData
            guard !chunk.isEmpty else { throw BenchFailure("W8 writer exited before its first commit") }
            line.append(chunk)
        }
    }

    /// Stops the child and returns its report (commits made, seconds it wrote).
    func stop() throws -> ChildReport {
        guard FileManager.default.createFile(atPath: stopFile, contents: nil) else {
            throw BenchFailure("cannot create \(stopFile)")
        }
        let data = output.readDataToEndOfFile()
        process.waitUntilExit()
        unlink(stopFile)
        guard process.terminationStatus == 0 else {
            throw BenchFailure("W8 writer exited with \(process.terminationStatus)")
        }
        return try JSONDecoder().decode(ChildReport.self, from: data)
    }
}

extension Child {
    /// `__child write-loop`: saves existing keys one commit at a time, about every 100 µs,
    /// until `stopFile` exists; prints `ready` after the first commit, then its report
    /// (`records` = commits).
    static func writeUntilStopped(_ implementation: Implementation, path: String, n: Int, durability: Durability,
                                  stopFile: String) async throws -> ChildReport {
        let encoder = Dataset.makeEncoder()
        let raw = implementation == .raw ? try RawSQLiteStore(path: path, durability: durability) : nil
        let rk = implementation == .recordKeeper
            ? RecordKeeperSide.makeStore(url: URL(fileURLWithPath: path), durability: durability) : nil
        let clock = ContinuousClock()
        let start = clock.now
        var commits = 0
        repeat {
            let index = (commits &* 7_919) % n
            let data = try encoder.encode(Dataset.item(index, revision: 50_000_000 + commits))
            if let raw { try raw.put(key: Dataset.key(index), data: data) }
            if let rk { try await rk.put(benchCollection, key: Dataset.key(index), data: data) }
            commits += 1
            if commits == 1 { FileHandle.standardOutput.write(Data("ready\n".utf8)) }
            usleep(100)
        } while access(stopFile, F_OK) != 0
        if let rk { await rk.close() }
        return ChildReport(seconds: (clock.now - start).seconds, records: commits, peakBytes: 0, baselineBytes: 0)
    }
}
