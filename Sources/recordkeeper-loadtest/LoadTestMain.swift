import Foundation
import RecordKeeperCommandLine

/// `recordkeeper-loadtest`: the load test of issue 25 (see docs/PERFORMANCE.md "Load test").
/// Exit status: 0 when every check holds, 1 for violations, 2 when the harness failed, 64 for
/// a bad command line.
@main
enum LoadTestMain {
    static func main() async {
        let options: LoadTestOptions
        do {
            options = try LoadTestOptions.parse(Array(CommandLine.arguments.dropFirst()))
        } catch let error as UsageError {
            let help = error.message == LoadTestOptions.help
            say(help ? error.message : "recordkeeper-loadtest: \(error.message)\n\n\(LoadTestOptions.help)")
            exit(help ? 0 : 64)
        } catch {
            say("recordkeeper-loadtest: \(error)")
            exit(64)
        }
        exit(await run(options))
    }

    static func run(_ options: LoadTestOptions) async -> Int32 {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recordkeeper-loadtest-\(UUID().uuidString)")
        let cluster: Cluster
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            chmod(directory.path, 0o755)
            cluster = try await Cluster.start(options, in: directory)
        } catch {
            say("recordkeeper-loadtest: could not start the servers: \(error) (files in \(directory.path))")
            return 2
        }
        var status: Int32 = 0
        do {
            let json: Data
            switch options.mode {
            case .run:
                let outcome = try await LoadRun(options: options, cluster: cluster).run()
                let verification = try await LoadVerification.check(outcome, cluster: cluster)
                let report = LoadReport(outcome, verification, cluster: cluster)
                print(report.text)
                json = try JSONEncoder.pretty.encode(report)
                if !report.violations.isEmpty { status = 1 }
            case .latency:
                let figures = try await LatencyRun(options: options, cluster: cluster).run()
                print(LatencyRun.text(figures))
                json = try JSONEncoder.pretty.encode(figures)
            }
            if let path = options.json {
                if path == "-" { print(String(decoding: json, as: UTF8.self)) } else { try json.write(to: URL(fileURLWithPath: path)) }
            }
        } catch {
            say("recordkeeper-loadtest: the run failed: \(error)")
            for relay in cluster.relays { say("--- relay \(relay.name) log (last lines):\n" + relay.logText().split(separator: "\n").suffix(20).joined(separator: "\n")) }
            status = 2
        }
        await cluster.shutdown()
        if options.keep || status != 0 {
            say("recordkeeper-loadtest: files kept in \(directory.path)")
        } else {
            do { try FileManager.default.removeItem(at: directory) } catch { say("recordkeeper-loadtest: could not remove \(directory.path): \(error)") }
        }
        return status
    }
}

extension JSONEncoder {
    static var pretty: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }
}
