import CSQLite
import Foundation
import RecordKeeper

@main
enum BenchMain {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "__child" {
            exit(await Child.main(Array(arguments.dropFirst())))
        }
        if let first = arguments.first, first.hasPrefix("__observe-") {
            exit(await ObserveBench.child(first, Array(arguments.dropFirst())))
        }
        if arguments.first == "observe" {
            exit(await ObserveBench.main(Array(arguments.dropFirst())))
        }
        if arguments.first == "cli-roundtrip" {
            exit(CLIRoundTrip.main(Array(arguments.dropFirst())))
        }
        let options: BenchOptions
        do {
            options = try BenchOptions.parse(arguments)
        } catch {
            progress("\(error)")
            exit(arguments.contains("--help") || arguments.contains("-h") ? 0 : 64)
        }
        exit(await runBench(options))
    }
}

/// Runs the selected workloads and prints/writes the results; returns the exit code.
/// A free (nonisolated) function so the measurements run off the main actor, like an
/// ordinary async caller.
func runBench(_ options: BenchOptions) async -> Int32 {
    let runner: BenchRunner
    do {
        runner = try BenchRunner(options: options)
    } catch {
        progress("recordkeeper-bench: cannot create the scratch directory: \(error)")
        return 1
    }
    defer { runner.cleanUp() }
    let clock = ContinuousClock()
    let start = clock.now
    #if DEBUG
    let configuration = "debug"
    runner.log("warning: debug build; use `swift run -c release recordkeeper-bench` for real figures")
    #else
    let configuration = "release"
    #endif
    runner.log("N=\(options.n), repeats=\(options.repeats), durability=\(options.durability.rawValue), "
        + "workloads=\(options.workloads.map(\.rawValue).joined(separator: ",")), dir=\(runner.directory.path)")
    do {
        var syncDone = false
        var syncClientDone = false
        var relayDone = false
        for workload in options.workloads {
            switch workload {
            case .w1: try await runner.runBulkInsert()
            case .w2:
                for durability in [Durability.normal, .full] {
                    try await runner.runSingleUpserts(workload: "W2", n: options.n, durability: durability, includeNaive: true)
                }
            case .w3: try await runner.runWholeReads(workload: "W3", n: options.n, includeNaive: true)
            case .w4: try await runner.runPointReads()
            case .w5: try await runner.runColdOpen()
            case .w6: try await runner.runPeakMemory()
            case .w7: try await runner.runScaling()
            case .w8: try await runner.runPointReadsBesideWriter()
            case .w9: try await runner.runObserveLatency()
            case .t1, .t2, .t3, .t4:
                try await runner.runTypedWorkload(workload)
            case .c1: try await runner.runCodecCost()
            case .o1: try await runner.runOutboxEnqueue()
            case .o2: try await runner.runOutboxBacklog()
            case .q1: try await runner.runNewestQuery()
            case .q2: try await runner.runRangeCount()
            case .q3: try await runner.runSavesWithIndexes()
            case .s1, .s2:
                // One run measures both (the pull reads what the push wrote).
                if !syncDone, let conninfo = options.postgres {
                    syncDone = true
                    try await runner.runSync(conninfo: conninfo)
                }
            case .s3, .s4:
                // One run measures both (the fresh device pulls what the upload pushed).
                if !syncClientDone, let conninfo = options.postgres {
                    syncClientDone = true
                    try await runner.runSyncClient(conninfo: conninfo)
                }
            case .s5:
                if let conninfo = options.postgres { try await runner.runCrowdedPush(conninfo: conninfo) }
            case .s8:
                if let conninfo = options.postgres { try await runner.runFilteredPull(conninfo: conninfo) }
            case .s9:
                if let conninfo = options.postgres { try await runner.runLiveWake(conninfo: conninfo) }
            case .s10:
                if let conninfo = options.postgres { try await runner.runHeldPulls(conninfo: conninfo) }
            case .s6, .s7:
                // One run measures both (the same relay and schema).
                if !relayDone, let conninfo = options.postgres {
                    relayDone = true
                    try await runner.runRelay(conninfo: conninfo)
                }
            }
        }
    } catch {
        progress("recordkeeper-bench: \(error)")
        return 1
    }
    let rows = ResultFormatter.computeRatios(runner.rows)
    let header: [String: String] = [
        "date": ISO8601DateFormatter().string(from: Date()),
        "configuration": configuration,
        "n": String(options.n),
        "repeats": String(options.repeats),
        "durability": options.durability.rawValue,
        "upserts": String(options.upserts),
        "pointReads": String(options.pointReads),
        "sqlite": String(cString: sqlite3_libversion()),
        "cores": String(ProcessInfo.processInfo.activeProcessorCount),
        "seconds": String(format: "%.1f", (clock.now - start).seconds),
    ]
    do {
        func render(_ format: OutputFormat) throws -> String {
            switch format {
            case .table:
                let settings = header.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                return "recordkeeper-bench  \(settings)\n"
                    + "ratio = implementation / raw SQLite (raw libpq for S1..S4, the same push into an empty server for S5, direct PostgresSyncServer for S6/S7, the pull of every collection for S8; time or memory; throughput inverted), > 1 is slower/bigger\n\n"
                    + ResultFormatter.table(rows)
            case .json: return try ResultFormatter.json(rows, header: header)
            case .csv: return ResultFormatter.csv(rows)
            }
        }
        print(try render(options.format), terminator: "")
        if let output = options.output {
            try render(options.outputFormat).write(toFile: output, atomically: true, encoding: .utf8)
            runner.log("wrote \(output)")
        }
    } catch {
        progress("recordkeeper-bench: cannot write the results: \(error)")
        return 1
    }
    return 0
}
