// Subprocesses (Process, python3 or the built executables) exist on macOS and Linux only: these
// tests are not built for iOS, tvOS, watchOS or visionOS.
#if os(macOS) || os(Linux)

import TestHelpers
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
/// directory, so a test never touches the real per-user store. Output goes through files
/// (``ChildProcess``).
struct LearnerRunner {
    let directory: URL
    var environment: [String: String] = [:]

    /// The built `learner` (`LEARNER_EXECUTABLE` overrides it).
    static let executable = BuildProducts.executable(named: "learner", override: "LEARNER_EXECUTABLE")

    /// The home directory the subprocess sees (not created).
    var home: URL { directory.appendingPathComponent("home") }

    @discardableResult
    func run(_ arguments: [String], environment extra: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> LearnerResult
    {
        let executable = try #require(Self.executable, "learner executable not found; build it first",
                                      sourceLocation: sourceLocation)
        var environment: [String: String?] = ["LEARNER_STORE": nil, "XDG_DATA_HOME": nil, "HOME": home.path]
        for (name, value) in self.environment.merging(extra, uniquingKeysWith: { _, new in new }) { environment[name] = value }
        let result = try await ChildProcess.run(executable, arguments, in: directory, environment: environment)
        return LearnerResult(status: result.status, output: result.output, errors: result.stderr)
    }
}

#endif
