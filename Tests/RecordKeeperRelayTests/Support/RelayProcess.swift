import Foundation
import HarnessSupport
import TestHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `recordkeeper-relay` executable, run as a process.
struct RelayProcess {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func executable() throws -> URL {
        guard let url = BuildProducts.executable(named: "recordkeeper-relay", override: "RECORDKEEPER_RELAY_BINARY") else {
            throw Failure(description: "recordkeeper-relay is not built (swift build --build-tests)")
        }
        return url
    }

    /// Runs a command to its end: exit status, standard output, standard error.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws
        -> (status: Int32, output: String, error: String)
    {
        let process = SpawnedProcess()
        process.executableURL = try executable()
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        return await onOwnThread {
            let out = output.fileHandleForReading.readDataToEndOfFile()
            let err = error.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        }
    }

    let child: ChildProcess
    /// Where the relay said it listens (`http://127.0.0.1:PORT`).
    let url: String

    /// Starts `recordkeeper-relay serve arguments` (its output files in `directory`) and waits
    /// for its "listening on" line.
    static func serve(_ arguments: [String], in directory: URL) async throws -> RelayProcess {
        let child = try ChildProcess(
            executable: try executable(), arguments: ["serve"] + arguments, in: directory,
            environment: [
                "RECORDKEEPER_RELAY_DATABASE": nil, "RECORDKEEPER_RELAY_SHARD_MAP": nil, "RECORDKEEPER_RELAY_LISTEN": nil,
            ])
        try child.start()
        let line = try await child.waitForLine(timeout: .seconds(120)) { $0.contains("listening on ") }
        let url = line[line.range(of: "listening on ")!.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines)
        return RelayProcess(child: child, url: url)
    }

    /// Everything the relay wrote to stderr so far.
    func log() throws -> String { try child.errorOutput() }

    /// Sends SIGTERM and returns once the relay has begun its drain (its "stopping" line).
    func beginTermination() async throws {
        child.kill(SIGTERM)
        try await waitUntil("the relay's drain", polling: .milliseconds(5)) {
            try log().contains("recordkeeper-relay: stopping")
        }
    }

    /// Returns the exit status and everything the relay wrote to stderr once it has ended.
    func exit() async throws -> (status: Int32, log: String) {
        await child.waitForExit(timeout: .seconds(120))
        return (child.process.terminationStatus, try log())
    }

    /// Sends SIGTERM; returns the exit status and everything the relay wrote to stderr.
    func terminate() async throws -> (status: Int32, log: String) {
        child.kill(SIGTERM)
        return try await exit()
    }

    /// Sends SIGKILL and waits for the end.
    func kill() async {
        child.kill(SIGKILL)
        await child.waitForExit(timeout: .seconds(120))
    }
}
