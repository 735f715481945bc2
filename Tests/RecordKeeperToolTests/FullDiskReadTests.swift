import Foundation
import TestHelpers
import Testing

/// A full disk must not keep a person from reading, exporting or checking a store whose main
/// file holds every commit (a trial found every read failing with "disk I/O error"), and a
/// write it refuses says which collection and key.
///
/// Not under ThreadSanitizer: its runtime dies of SIGBUS in a process with a file size limit.
@Suite(.disabled(if: underThreadSanitizer, "ThreadSanitizer's runtime dies (SIGBUS) under a file size limit"))
struct FullDiskReadTests {
    /// `sh -c` arguments that run the tool with a file size limit of `blocks` (`ulimit -f`:
    /// 512 bytes each in dash, Debian's `/bin/sh`, 1 KiB in bash), SIGXFSZ ignored: a write
    /// past it fails with EFBIG, as one fails with ENOSPC on a full disk.
    static func limited(_ blocks: Int, _ arguments: [String]) throws -> [String] {
        let executable = try #require(ToolRunner.executable)
        return ["-c", "ulimit -f \(blocks); trap '' XFSZ; exec \"$0\" \"$@\"", executable.path] + arguments
    }

    @Test func `an import into a new path that the full disk refuses leaves nothing there`() async throws {
        try await withTool { tool in
            let input = tool.directory.appendingPathComponent("input.ndjson")
            try Data(#"{"collection":"c","key":"k","value":1}"#.utf8).write(to: input)
            let store = tool.directory.appendingPathComponent("sub/new.sqlite").path
            // The opening fails after SQLite began the file (a blank WAL database), and the
            // undo meets the same failure: it removes that start, and the directory it made.
            let result = try await ChildProcess.run(
                URL(fileURLWithPath: "/bin/sh"), try Self.limited(16, ["--store", store, "import", input.path]),
                in: tool.directory, environment: ["RECORDKEEPER_STORE": nil])
            #expect(result.status == 74)
            #expect(!result.stderr.contains("warning"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: tool.directory.appendingPathComponent("sub").path))
        }
    }

    @Test func `a put whose commit the full disk refuses names its collection and key`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "c", "k", #""v""#]).status == 0)
            // 300 KB of JSON text: the write goes past the limit of 100 blocks (50 or 100 KiB).
            let value = Data(("\"" + String(repeating: "x", count: 300_000) + "\"").utf8)
            let result = try await ChildProcess.run(
                URL(fileURLWithPath: "/bin/sh"), try Self.limited(100, ["--store", tool.storePath, "put", "c", "big", "-"]),
                in: tool.directory, environment: ["RECORDKEEPER_STORE": nil], input: value)
            #expect(result.status == 74)
            #expect(result.stderr.contains(#"collection "c" (key "big")"#), "\(result.stderr)")
            #expect(try await tool.runOnStore(["list", "c"]).outputLines.map { $0.split(separator: "\t")[0] } == ["k"])
        }
    }

    @Test func `a store whose log index cannot grow, as on a full disk, is still read, exported and checked`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "c", "k", #""v""#]).status == 0)
            // With a file size limit of 16 blocks (8 or 16 KiB) SQLite cannot grow a new `-shm`
            // to its 32 KiB. (The output files of the tool stay far below it.)
            for command in [["list", "c", "--values"], ["export"], ["check"], ["get", "c", "k"]] {
                let result = try await ChildProcess.run(
                    URL(fileURLWithPath: "/bin/sh"), try Self.limited(16, ["--store", tool.storePath] + command),
                    in: tool.directory, environment: ["RECORDKEEPER_STORE": nil])
                #expect(result.status == 0, "\(command): \(result.stderr)")
                if command[0] == "get" { #expect(result.output == "\"v\"\n") }
            }
        }
    }
}
