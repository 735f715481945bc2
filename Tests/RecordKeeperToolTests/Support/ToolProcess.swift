import RecordKeeperTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `recordkeeper` tool as a running subprocess the test talks to while it runs: standard
/// input is a pipe the test writes, stdout and stderr go to files in `outputDirectory`.
final class ToolProcess {
    let process = Process()
    let input = Pipe()
    private let outputURL: URL
    private let errorURL: URL

    init(_ arguments: [String], in directory: URL, outputDirectory: URL, environment: [String: String] = [:]) throws {
        let executable = try #require(ToolRunner.executable, "recordkeeper executable not found; build it first")
        let id = UUID().uuidString
        outputURL = outputDirectory.appendingPathComponent("stdout-\(id)")
        errorURL = outputDirectory.appendingPathComponent("stderr-\(id)")
        for url in [outputURL, errorURL] { try Data().write(to: url) }
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var merged = ProcessInfo.processInfo.environment
        merged["RECORDKEEPER_STORE"] = nil
        merged.merge(environment) { _, new in new }
        process.environment = merged
        process.standardInput = input
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
    }

    func start() throws { try process.run() }

    var pid: Int32 { process.processIdentifier }

    func send(_ signal: Int32) { _ = kill(process.processIdentifier, signal) }

    /// Waits for the process to end, polling (a hang guard of `timeout`, not a timing).
    func waitForExit(timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                send(SIGKILL)
                Issue.record("the tool did not exit within \(timeout)")
                break
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        process.waitUntilExit()
    }

    /// Polls until `condition` holds, failing after `timeout` (a hang guard).
    static func waitUntil(
        _ what: String, timeout: Duration = .seconds(120), _ condition: () throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(what) did not happen within \(timeout)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// The paths the process has open now (`/proc/PID/fd`; Linux).
    func openPaths() -> [String] {
        let directory = "/proc/\(pid)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)") }
    }

    func output() throws -> String { String(decoding: try Data(contentsOf: outputURL), as: UTF8.self) }
    func errorOutput() throws -> String { String(decoding: try Data(contentsOf: errorURL), as: UTF8.self) }
}
