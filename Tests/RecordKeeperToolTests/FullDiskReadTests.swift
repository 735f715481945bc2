import Foundation
import TestHelpers
import Testing

/// A full disk must not keep a person from reading, exporting or checking a store whose main
/// file holds every commit (a trial found every read failing with "disk I/O error").
@Suite struct FullDiskReadTests {
    @Test func `a store whose log index cannot grow, as on a full disk, is still read, exported and checked`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "c", "k", #""v""#]).status == 0)
            let executable = try #require(ToolRunner.executable)
            // A file size limit of 16 KiB, with SIGXFSZ ignored: a write past it fails with
            // EFBIG, as one fails with ENOSPC on a full disk, and SQLite cannot grow a new
            // `-shm` to its 32 KiB. (The output files of the tool stay far below it.)
            let limited = "ulimit -f 16; trap '' XFSZ; exec \"$0\" \"$@\""
            for command in [["list", "c", "--values"], ["export"], ["check"], ["get", "c", "k"]] {
                let result = try await ChildProcess.run(
                    URL(fileURLWithPath: "/bin/sh"), ["-c", limited, executable.path, "--store", tool.storePath] + command,
                    in: tool.directory, environment: ["RECORDKEEPER_STORE": nil])
                #expect(result.status == 0, "\(command): \(result.stderr)")
                if command[0] == "get" { #expect(result.output == "\"v\"\n") }
            }
        }
    }
}
