// Subprocesses (Process) exist on macOS and Linux only: not built for iOS, tvOS, watchOS or
// visionOS, where the tests that need this are not built either.
#if os(macOS) || os(Linux)

public import Foundation
public import HarnessSupport
public import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A subprocess whose stdin, stdout and stderr are files in a directory (so a large output can
/// never block on a pipe): the one runner behind the tool, learner, crash-helper and receiver
/// tests. ``run(_:_:in:environment:input:)`` runs one to its end; `start()` with
/// ``waitForOutput(timeout:)``, ``waitForLine(timeout:where:)``, ``kill(_:)`` and
/// ``waitForExit()`` drive a long-running one.
///
/// `@unchecked Sendable`: after `start()` only `Process`'s own thread-safe accessors are used
/// and the files are read, never written, by this object; `exited` is an actor.
public final class ChildProcess: @unchecked Sendable {
    public let process = SpawnedProcess()
    public let outputURL: URL
    public let errorURL: URL
    private let inputURL: URL?
    private let exited = Gate()

    /// Prepares `executable` with `arguments`, run in `directory`. Its output files go to
    /// `outputDirectory` (default: `directory`). `environment` changes the inherited
    /// environment: a nil value removes the variable. Standard input is `input` (from a file),
    /// or `inputPipe`, which the test writes while the process runs, or nothing.
    public init(
        executable: URL, arguments: [String], in directory: URL, outputDirectory: URL? = nil,
        environment: [String: String?] = [:], input: Data? = nil, inputPipe: Pipe? = nil
    ) throws {
        let id = UUID().uuidString
        let outputs = outputDirectory ?? directory
        outputURL = outputs.appendingPathComponent(".out-\(id)")
        errorURL = outputs.appendingPathComponent(".err-\(id)")
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil),
            FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: directory.path]) }
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var inherited = ProcessInfo.processInfo.environment
        for (name, value) in environment { inherited[name] = value }
        process.environment = inherited
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        if let inputPipe {
            inputURL = nil
            process.standardInput = inputPipe
        } else if let input {
            let url = outputs.appendingPathComponent(".in-\(id)")
            try input.write(to: url)
            inputURL = url
            process.standardInput = try FileHandle(forReadingFrom: url)
        } else {
            inputURL = nil
            process.standardInput = FileHandle.nullDevice
        }
        process.terminationHandler = { [exited] _ in Task { await exited.open() } }
    }

    /// Starts the process.
    public func start() throws { try process.run() }

    /// Sends `signal` (SIGKILL by default: a SIGTERM may be ignored when the test runner
    /// ignores it, since that is inherited).
    public func kill(_ signal: Int32 = SIGKILL) { _ = sendSignal(process.processIdentifier, signal) }

    /// Returns once the process has ended, without blocking a thread meanwhile.
    public func waitForExit() async {
        await exited.wait()
        process.waitUntilExit()  // the status is set by now; this only makes sure
    }

    /// Returns once the process has ended; when it has not within `timeout` (a hang guard),
    /// kills it and records an issue.
    public func waitForExit(timeout: Duration, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            try await withTimeLimit("the process's exit", timeout: timeout, sourceLocation: sourceLocation) {
                [exited] in await exited.wait()
            }
        } catch {
            kill()
        }
        process.waitUntilExit()
    }

    /// Returns once the process has written something to stdout.
    /// - Throws: ``TimedOut`` (recorded as an issue) when it wrote nothing within `timeout`,
    ///   or ended without writing.
    public func waitForOutput(timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        _ = try await waitForLine(timeout: timeout, sourceLocation: sourceLocation) { _ in true }
    }

    /// Returns the first complete line of stdout that `matches`, polling the output file until
    /// one is there (the process's own output is the handshake).
    /// - Throws: ``TimedOut`` (recorded as an issue) when none came within `timeout`, or the
    ///   process ended without one.
    @discardableResult
    public func waitForLine(
        timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
        where matches: (String) -> Bool
    ) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let running = process.isRunning
            let text = try output()
            let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
            if let line = complete.split(separator: "\n").map(String.init).first(where: matches) { return line }
            guard running, ContinuousClock.now < deadline else {
                let stderr: String
                do { stderr = try errorOutput() } catch { stderr = "(unreadable: \(error))" }
                let failure = TimedOut(
                    running
                        ? "\(process.executableURL?.lastPathComponent ?? "the process") printed no such line within \(timeout)"
                        : "\(process.executableURL?.lastPathComponent ?? "the process") ended (status \(process.terminationStatus)) without printing such a line; stderr: \(stderr.suffix(500))")
                Issue.record(Comment(rawValue: failure.description), sourceLocation: sourceLocation)
                throw failure
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// What the process wrote to stdout so far.
    public func output() throws -> String { String(decoding: try Data(contentsOf: outputURL), as: UTF8.self) }
    /// What the process wrote to stderr so far.
    public func errorOutput() throws -> String { String(decoding: try Data(contentsOf: errorURL), as: UTF8.self) }

    /// Removes the output (and input) files.
    public func removeFiles() throws {
        for url in [outputURL, errorURL] + (inputURL.map { [$0] } ?? []) {
            try FileManager.default.removeItem(at: url)
        }
    }

    /// The outcome of a process run to its end.
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: Data
        public let stderr: String
        /// stdout as text.
        public var output: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs a brief system command (`chattr`, `mount`) to its end, blocking the calling thread
    /// meanwhile, for the synchronous clean-up paths that need one (a directory's removal).
    /// Tool and helper processes, which run for long, go through the async
    /// ``run(_:_:in:environment:input:)``.
    public static func runBriefCommand(_ executable: URL, _ arguments: [String], in directory: URL) throws -> Result {
        let child = try ChildProcess(executable: executable, arguments: arguments, in: directory)
        try child.start()
        child.process.waitUntilExit()
        return try child.finish()
    }

    /// Runs `executable` to its end and removes its files. The wait holds no thread: the
    /// calling task is suspended until the process's termination handler opens its gate (a
    /// blocking wait here had held cooperative threads for whole tool runs, and under
    /// ThreadSanitizer, with two of them, had stalled every other test).
    public static func run(
        _ executable: URL, _ arguments: [String], in directory: URL, environment: [String: String?] = [:],
        input: Data? = nil
    ) async throws -> Result {
        let child = try ChildProcess(
            executable: executable, arguments: arguments, in: directory, environment: environment, input: input)
        try child.start()
        await child.waitForExit()
        return try child.finish()
    }

    /// The ended process's status and output; removes its files.
    private func finish() throws -> Result {
        let result = Result(
            status: process.terminationStatus, stdout: try Data(contentsOf: outputURL), stderr: try errorOutput())
        try removeFiles()
        return result
    }
}

private func sendSignal(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }

#endif

/// Whether this run is under ThreadSanitizer (`scripts/sanitize.sh` says so in
/// `RECORDKEEPER_SANITIZER`): the tests' helper processes are built with it too.
public let underThreadSanitizer = ProcessInfo.processInfo.environment["RECORDKEEPER_SANITIZER"] == "thread"

/// Whether a suite that the rest of a sanitized run starves of the cooperative pool should
/// skip itself: under ThreadSanitizer, unless the run holds only such suites
/// (`RECORDKEEPER_SANITIZER_ALONE=1`, which `.ci/run` sets for its second sanitized run).
public let starvedUnderThreadSanitizer =
    underThreadSanitizer && ProcessInfo.processInfo.environment["RECORDKEEPER_SANITIZER_ALONE"] != "1"
