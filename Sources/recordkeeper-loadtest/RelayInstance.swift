import Foundation
import HarnessSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `recordkeeper-relay serve` process on loopback, restarted on the same port (SIGTERM, its
/// drain, then a new process), so the devices' URLs stay valid.
final class RelayInstance: Sendable {
    let name: String
    private let executable: String
    private let arguments: [String]
    private let logURL: URL
    private struct Running: Sendable {
        var process: SpawnedProcess?
        var port: Int?
        var peak = ProcessFigures(rssBytes: 0, peakRSSBytes: 0, threads: 0)
        var starts = 0
    }
    private let state = Locked(Running())

    /// `arguments` are those of `serve` but `--listen`.
    init(name: String, executable: String, arguments: [String], directory: URL) {
        self.name = name
        self.executable = executable
        self.arguments = arguments
        logURL = directory.appendingPathComponent("relay-\(name).log")
    }

    var port: Int? { state.withLock { $0.port } }
    var url: URL { URL(string: "http://127.0.0.1:\(port ?? 0)")! }
    var pid: Int32? { state.withLock { $0.process?.processIdentifier } }
    /// Processes started so far (1 + restarts).
    var starts: Int { state.withLock { $0.starts } }

    /// Starts the relay (on a free port the first time, on the same one after) and returns once
    /// it says it listens.
    func start() async throws {
        let port = state.withLock { $0.port } ?? 0
        if !FileManager.default.fileExists(atPath: logURL.path),
            !FileManager.default.createFile(atPath: logURL.path, contents: nil)
        {
            throw LoadTestFailure("cannot create \(logURL.path)")
        }
        let log = try FileHandle(forWritingTo: logURL)
        try log.seekToEnd()
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--listen", "127.0.0.1:\(port)"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["RECORDKEEPER_RELAY_DATABASE"] = nil
        environment["RECORDKEEPER_RELAY_LISTEN"] = nil
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try log.close()
        guard let line = await Commands.firstLine(of: output, where: { $0.contains("listening on ") }) else {
            process.waitUntilExit()
            throw LoadTestFailure("relay \(name) ended (exit \(process.terminationStatus)) before listening; see \(logURL.path)")
        }
        guard let colon = line.lastIndex(of: ":"), let listening = Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)) else {
            throw LoadTestFailure("relay \(name) said \"\(line)\": no port")
        }
        state.withLock {
            $0.process = process
            $0.port = listening
            $0.starts += 1
        }
    }

    /// SIGTERM, then waits for the end of its drain; the exit status must be 0.
    func stop() async throws {
        guard let process = state.withLock({ $0.process }) else { return }
        sample()
        kill(process.processIdentifier, SIGTERM)
        await withCheckedContinuation { continuation in
            Thread {
                process.waitUntilExit()
                continuation.resume()
            }.start()
        }
        state.withLock { $0.process = nil }
        guard process.terminationStatus == 0 else {
            throw LoadTestFailure("relay \(name) exited with \(process.terminationStatus) after SIGTERM; see \(logURL.path)")
        }
    }

    func restart() async throws {
        try await stop()
        try await start()
    }

    /// Reads its memory and threads now; keeps the largest seen.
    @discardableResult
    func sample() -> ProcessFigures? {
        guard let pid, let figures = ProcessFigures.read(pid: pid) else { return nil }
        state.withLock {
            $0.peak.rssBytes = max($0.peak.rssBytes, figures.rssBytes)
            $0.peak.peakRSSBytes = max($0.peak.peakRSSBytes, figures.peakRSSBytes)
            $0.peak.threads = max($0.peak.threads, figures.threads)
        }
        return figures
    }

    /// The largest figures any of its processes reached (as sampled; VmHWM of each).
    var peak: ProcessFigures { state.withLock { $0.peak } }

    /// Its log so far, for a failure report.
    func logText() -> String {
        (try? String(contentsOf: logURL, encoding: .utf8)) ?? "(no log at \(logURL.path))"
    }
}
