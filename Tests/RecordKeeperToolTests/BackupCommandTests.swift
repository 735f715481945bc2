import TestHelpers
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `backup DEST [--overwrite]`.
@Suite struct BackupCommandTests {
    @Test func `backup writes a private copy that passes check and holds the same records`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", #"{"name":"Alice"}"#])
            try await tool.runOnStore(["put", "users", "n", "-5"])
            let destination = tool.directory.appendingPathComponent("copy.sqlite").path
            let result = try await tool.runOnStore(["backup", destination])
            #expect(result.status == 0)
            #expect(result.output == "backed up \(tool.storePath) to \(destination)\n")
            let attributes = try FileManager.default.attributesOfItem(atPath: destination)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(!FileManager.default.fileExists(atPath: destination + "-wal"))

            let check = try await tool.run(["--store", destination, "check"])
            #expect(check.status == 0)
            #expect(check.output.hasPrefix("integrity: ok\n"))
            #expect(try await tool.run(["--store", destination, "list", "users", "--values"]).output
                    == (try await tool.runOnStore(["list", "users", "--values"])).output)
        }
    }

    @Test func `backup refuses an existing file with exit 73 unless given --overwrite`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "k", "1"])
            let destination = try tool.file("taken.sqlite", "keep me")
            let refused = try await tool.runOnStore(["backup", destination])
            #expect(refused.status == 73)
            #expect(refused.stderr == "recordkeeper: \(destination) already exists; it was left as it is "
                    + "(give --overwrite to replace it)\n")
            #expect(try String(contentsOfFile: destination, encoding: .utf8) == "keep me")

            #expect(try await tool.runOnStore(["backup", destination, "--overwrite"]).status == 0)
            #expect(try await tool.run(["--store", destination, "get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `backup onto a directory says it is a directory, with or without --overwrite`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "k", "1"])
            let destination = tool.directory.appendingPathComponent("copies", isDirectory: true)
            try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
            for extra in [[], ["--overwrite"]] {
                let refused = try await tool.runOnStore(["backup", destination.path] + extra)
                #expect(refused.status == 73)
                #expect(refused.stderr.contains("is a directory"), "\(refused.stderr)")
                #expect(!refused.stderr.contains("--overwrite"), "\(refused.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path).isEmpty)
        }
    }

    @Test func `backup onto the store itself or a file beside it is refused and leaves it unchanged`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "k", "1"])
            for (suffix, extra) in [("", []), ("", ["--overwrite"]), ("-wal", ["--overwrite"]),
                                    ("-shm", ["--overwrite"]), ("-observers", []), ("-observers", ["--overwrite"])] {
                let result = try await tool.runOnStore(["backup", tool.storePath + suffix] + extra)
                #expect(result.status == 73)
                #expect(result.stderr.contains("is the store's own \(suffix.isEmpty ? "file" : suffix + " file")"), "\(result.stderr)")
                #expect(!result.stderr.contains("give --overwrite"), "\(result.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: tool.storePath + "-wal"))
            #expect(try await tool.runOnStore(["get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `backup of a missing store exits 66 and creates nothing`() async throws {
        try await withTool { tool in
            let destination = tool.directory.appendingPathComponent("copy.sqlite").path
            let result = try await tool.runOnStore(["backup", destination])
            #expect(result.status == 66)
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
            #expect(!FileManager.default.fileExists(atPath: destination))
        }
    }

    // Under ThreadSanitizer the tool's own runtime dies of SIGBUS once files are limited
    // (`ulimit -f`), before the backup reports its error: the behaviour is tested in the
    // ordinary run.
    @Test(.disabled(if: underThreadSanitizer, "the sanitizer's runtime cannot run under a file-size limit"))
    func `a backup that fails midway leaves no copy and no temporary file behind`() async throws {
        try await withTool { tool in
            // About 2 MB of records.
            let lines = (0..<400).map { #"{"collection":"c","key":"k\#($0)","value":"\#(String(repeating: "x", count: 5_000))"}"# }
            let input = try tool.file("records.ndjson", lines.joined(separator: "\n") + "\n")
            #expect(try await tool.runOnStore(["import", input]).status == 0)
            let before = try FileManager.default.contentsOfDirectory(atPath: tool.directory.path).sorted()
            let destination = tool.directory.appendingPathComponent("copy.sqlite").path
            // The tool may write files of at most 256 KB (ulimit -f counts 512-byte blocks; the
            // signal is ignored, so a longer write fails with EFBIG): the copy fails part way.
            let executable = try #require(ToolRunner.executable).path
            let run = try await ChildProcess.run(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "trap '' XFSZ; ulimit -f 512; exec \"$0\" --store \"$1\" backup \"$2\"",
                 executable, tool.storePath, destination],
                in: tool.directory)
            #expect(run.status == 74, "\(run.stderr)")
            #expect(run.stderr.contains("copying the store to \(destination)"), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: destination))
            let after = try FileManager.default.contentsOfDirectory(atPath: tool.directory.path).sorted()
            #expect(after == before, "left behind: \(Set(after).subtracting(before).sorted())")
            // The store is untouched and a backup without the limit works.
            #expect(try await tool.run(["--store", tool.storePath, "check"]).status == 0)
            #expect(try await tool.runOnStore(["backup", destination]).status == 0)
        }
    }

    @Test(.enabled(if: OtherUser.nobody != nil, OtherUser.unavailableReason), arguments: [0o444, 0o644] as [mode_t])
    func `another user backs up a store it may read but not write`(mode: mode_t) async throws {
        let user = try #require(OtherUser.nobody)
        try await withTemporaryDirectory { directory in
            // root's store, 0444 or 0644, in a directory others may enter and read but not write.
            let shared = directory.appendingPathComponent("shared", isDirectory: true)
            let output = directory.appendingPathComponent("output", isDirectory: true)
            for folder in [shared, output] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            let owner = ToolRunner(directory: shared)
            #expect(try await owner.runOnStore(["put", "notes", "today", #""milk""#]).status == 0)
            #expect(try await owner.runOnStore(["put", "notes", "later", #""bread""#]).status == 0)
            #expect(chmod(directory.path, 0o755) == 0)
            #expect(chmod(shared.path, 0o755) == 0)
            #expect(chmod(output.path, 0o777) == 0)
            #expect(chmod(owner.storePath, mode) == 0)
            let before = try FileManager.default.contentsOfDirectory(atPath: shared.path).sorted()
            let bytes = try Data(contentsOf: URL(fileURLWithPath: owner.storePath))
            var tool = ToolRunner(directory: output)
            tool.user = user

            let destination = output.appendingPathComponent("copy.sqlite").path
            let result = try await tool.run(["backup", destination, "--store", owner.storePath])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.output == "backed up \(owner.storePath) to \(destination)\n")
            let copy = try await owner.run(["--store", destination, "list", "notes", "--values"])
            #expect(copy.status == 0, "\(copy.stderr)")
            #expect(copy.output == (try await owner.runOnStore(["list", "notes", "--values"])).output)
            #expect(try await owner.run(["--store", destination, "check"]).status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: shared.path).sorted() == before)
            #expect(try Data(contentsOf: URL(fileURLWithPath: owner.storePath)) == bytes, "the store was only read")
            // Writing is still refused, saying why.
            let put = try await tool.run(["put", "notes", "today", #""eggs""#, "--store", owner.storePath])
            #expect(put.status == 74)
            #expect(put.stderr.contains("read-only"), "\(put.stderr)")
        }
    }
}
