import TestHelpers
import Foundation
import Testing

/// Command-line arguments that are not valid UTF-8 are refused (exit 65, naming the argument),
/// never silently turned into U+FFFD, which would make two different keys one record.
@Suite struct ArgumentEncodingTests {
    /// Runs the tool through bash, so that `arguments` (bash `$'…'` words) can hold any bytes.
    private func runRaw(_ arguments: String, in directory: URL) async throws -> ToolResult {
        let executable = try #require(ToolRunner.executable, "recordkeeper executable not found")
        let bash = try #require(["/bin/bash", "/usr/bin/bash"].first { FileManager.default.isExecutableFile(atPath: $0) })
        let run = try await ChildProcess.run(
            URL(fileURLWithPath: bash), ["-c", "exec \"$TOOL\" \(arguments)"], in: directory,
            environment: ["RECORDKEEPER_STORE": nil, "TOOL": executable.path])
        return ToolResult(status: run.status, stdout: run.stdout, stderr: run.stderr)
    }

    @Test(arguments: [
        ("put notes $'caf\\xe9' '\"v\"' --store s.sqlite", "KEY"),
        ("put $'n\\xffotes' k '\"v\"' --store s.sqlite", "COLLECTION"),
        ("put notes k $'\\xc3\\x28' --store s.sqlite", "VALUE"),
        ("put notes k 1 --store $'s\\xff.sqlite'", "--store"),
    ])
    func `an argument that is not UTF-8 is refused with exit 65 and named`(arguments: String, named: String) async throws {
        try await withTemporaryDirectory { directory in
            let result = try await runRaw(arguments, in: directory)
            #expect(result.status == 65, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("recordkeeper: "))
            #expect(result.stderr.contains(named), "\(result.stderr)")
            #expect(result.stderr.contains("not valid UTF-8"), "\(result.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "nothing was created")
        }
    }

    @Test func `two keys that differ only in invalid bytes never land on one record`() async throws {
        try await withTemporaryDirectory { directory async throws in
            #expect(try await runRaw("put notes $'a\\xff' 1 --store s.sqlite", in: directory).status == 65)
            #expect(try await runRaw("put notes $'a\\xfe' 2 --store s.sqlite", in: directory).status == 65)
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("s.sqlite").path))
        }
    }

    @Test func `valid UTF-8 arguments work as before`() async throws {
        try await withTemporaryDirectory { directory in
            #expect(try await runRaw("put notes $'caf\\xc3\\xa9' '\"v\"' --store s.sqlite", in: directory).status == 0)
            let got = try await runRaw("get notes café --store s.sqlite", in: directory)
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.output == "\"v\"\n")
        }
    }
}
