import TestHelpers
import HarnessSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `recordkeeper` tool as a running subprocess the test talks to while it runs: standard
/// input is a pipe the test writes, stdout and stderr go to files in `outputDirectory`
/// (a ``ChildProcess``).
final class ToolProcess {
    private let child: ChildProcess
    let input = Pipe()

    init(_ arguments: [String], in directory: URL, outputDirectory: URL, environment: [String: String] = [:]) throws {
        let executable = try #require(ToolRunner.executable, "recordkeeper executable not found; build it first")
        var changes: [String: String?] = ["RECORDKEEPER_STORE": nil]
        for (name, value) in environment { changes[name] = value }
        child = try ChildProcess(
            executable: executable, arguments: arguments, in: directory, outputDirectory: outputDirectory,
            environment: changes, inputPipe: input)
    }

    var process: SpawnedProcess { child.process }

    func start() throws { try child.start() }

    var pid: Int32 { process.processIdentifier }

    func send(_ signal: Int32) { child.kill(signal) }

    /// Waits for the process to end (a hang guard of `timeout`, not a timing: then it is
    /// killed and an issue recorded).
    func waitForExit(timeout: Duration = .seconds(120)) async throws {
        await child.waitForExit(timeout: timeout)
    }

    /// Polls until `condition` holds, failing after `timeout` (a hang guard).
    static func waitUntil(
        _ what: String, timeout: Duration = .seconds(120), _ condition: () throws -> Bool
    ) async throws {
        try await TestHelpers.waitUntil(what, timeout: timeout, polling: .milliseconds(2)) { try condition() }
    }

    #if os(Linux)
        /// The paths the process has open now (`/proc/PID/fd`; Linux only).
        func openPaths() -> [String] {
            let directory = "/proc/\(pid)/fd"
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
            return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)") }
        }
    #endif

    /// The first complete line of stdout that `matches` (``ChildProcess/waitForLine(timeout:sourceLocation:where:)``).
    @discardableResult
    func waitForLine(
        timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
        where matches: (String) -> Bool
    ) async throws -> String {
        try await child.waitForLine(timeout: timeout, sourceLocation: sourceLocation, where: matches)
    }

    func output() throws -> String { try child.output() }
    func errorOutput() throws -> String { try child.errorOutput() }
}
