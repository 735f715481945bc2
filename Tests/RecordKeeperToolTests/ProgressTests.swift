import TestHelpers
import Foundation
import Testing

/// Progress is drawn on stderr only when stderr is a terminal, and `--quiet` turns it off.
/// Runs the tool under `script(1)`, which gives it a pseudo-terminal (util-linux syntax).
@Suite struct ProgressTests {
    private static let script: String? = {
        #if os(Linux)
        return FileManager.default.isExecutableFile(atPath: "/usr/bin/script") ? "/usr/bin/script" : nil
        #else
        return nil
        #endif
    }()

    /// Runs `command` through `sh -c` on a pseudo-terminal and returns what the terminal showed
    /// (`script` copies the terminal to its stdout).
    private func onTerminal(_ command: String, in directory: URL) async throws -> String {
        let run = try await ChildProcess.run(
            URL(fileURLWithPath: try #require(Self.script)), ["-qec", command, "/dev/null"], in: directory)
        #expect(run.status == 0, "\(run.stderr)")
        return run.output + run.stderr
    }

    @Test(.enabled(if: script != nil, "needs script(1) from util-linux"))
    func `a long import shows progress on a terminal's stderr only`() async throws {
        try await withTool { tool in
            let executable = try #require(ToolRunner.executable).path
            let lines = (0..<20_000).map { #"{"collection":"c","key":"k\#($0)","value":\#($0)}"# }
            let file = try tool.file("many.ndjson", lines.joined(separator: "\n") + "\n")
            let shown = try await onTerminal("'\(executable)' import '\(file)' --store '\(tool.storePath)'",
                                       in: tool.directory)
            #expect(shown.contains("records, "))
            #expect(shown.contains("/s"))
            #expect(shown.contains("imported 1 collections: added 20000"))

            let withoutStderr = try await onTerminal(
                "'\(executable)' import '\(file)' --store '\(tool.storePath)' 2>/dev/null", in: tool.directory)
            #expect(!withoutStderr.contains("records, "))
            #expect(withoutStderr.contains("imported 1 collections"))

            let quiet = try await onTerminal("'\(executable)' import '\(file)' --quiet --store '\(tool.storePath)'",
                                       in: tool.directory)
            #expect(quiet.isEmpty)
        }
    }
}
