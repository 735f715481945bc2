// Subprocesses (Process, python3 or the built executables) exist on macOS and Linux only: these
// tests are not built for iOS, tvOS, watchOS or visionOS.
#if os(macOS) || os(Linux)

import RecordKeeperTestSupport
import Foundation
import Testing

/// The output of one run of the `learner` binary.
struct LearnerResult {
    let status: Int32
    let output: String
    let errors: String
}

/// Runs the built `learner` executable as a subprocess in a working directory, with its own
/// environment: no inherited `LEARNER_STORE` or `XDG_DATA_HOME`, and `HOME` inside the test's
/// directory, so a test never touches the real per-user store. Output goes through files.
struct LearnerRunner {
    let directory: URL
    var environment: [String: String] = [:]

    /// The built `learner` (`LEARNER_EXECUTABLE` overrides it).
    static let executable = BuildProducts.executable(named: "learner", override: "LEARNER_EXECUTABLE")

    /// The home directory the subprocess sees (not created).
    var home: URL { directory.appendingPathComponent("home") }

    @discardableResult
    func run(_ arguments: [String], environment extra: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation)
        throws -> LearnerResult
    {
        let executable = try #require(Self.executable, "learner executable not found; build it first",
                                      sourceLocation: sourceLocation)
        let id = UUID().uuidString
        let outputURL = directory.appendingPathComponent(".stdout-\(id)")
        let errorURL = directory.appendingPathComponent(".stderr-\(id)")
        try Data().write(to: outputURL)
        try Data().write(to: errorURL)
        defer {
            for url in [outputURL, errorURL] {
                do {
                    try FileManager.default.removeItem(at: url)
                } catch {
                    Issue.record("could not remove \(url.path): \(error)")
                }
            }
        }
        let outputHandle = try FileHandle(forWritingTo: outputURL)
        let errorHandle = try FileHandle(forWritingTo: errorURL)
        defer {
            for handle in [outputHandle, errorHandle] {
                do {
                    try handle.close()
                } catch {
                    Issue.record("could not close a handle: \(error)")
                }
            }
        }

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment["LEARNER_STORE"] = nil
        environment["XDG_DATA_HOME"] = nil
        environment["HOME"] = home.path
        environment.merge(self.environment) { _, new in new }
        environment.merge(extra) { _, new in new }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outputHandle
        process.standardError = errorHandle
        try process.run()
        process.waitUntilExit()
        return LearnerResult(
            status: process.terminationStatus,
            output: String(decoding: try Data(contentsOf: outputURL), as: UTF8.self),
            errors: String(decoding: try Data(contentsOf: errorURL), as: UTF8.self))
    }
}

/// POSIX permission bits of a file.
func permissions(of url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

#endif
