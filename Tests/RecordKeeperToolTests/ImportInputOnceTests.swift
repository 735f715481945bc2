import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// An import that reads its input twice (into a new store, or `--replace`) opens only a
/// regular file twice: a pipe or a FIFO is copied once and read from the copy. And
/// `--replace` rewrites a collection's records, never what the store records of the
/// collection besides them.
@Suite struct ImportInputOnceTests {
    private static let lines = (0..<50).map { #"{"collection":"c","key":"k\#($0)","value":\#($0)}"# }
        .joined(separator: "\n") + "\n"

    /// Runs `command` through `/bin/sh` with `$0` the tool, `$1` the store and `$2` an input
    /// file holding ``lines``, killed after 60 s (a hang is a failure, exit 137: a tool waiting in open(2) inside its interruption window outlives SIGTERM).
    private func shell(_ tool: ToolRunner, _ command: String) async throws -> ChildProcess.Result {
        let input = try tool.file("input.ndjson", Self.lines)
        let executable = try #require(ToolRunner.executable).path
        return try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", command, executable, tool.storePath, input], in: tool.directory)
    }

    @Test(arguments: [false, true])
    func `a pipe given as a path is imported whole into a new store, and with replace`(replace: Bool) async throws {
        try await withTool { tool in
            if replace { #expect(try await tool.runOnStore(["put", "c", "old", "1"]).status == 0) }
            let flag = replace ? " --replace" : ""
            let run = try await shell(tool, "cat \"$2\" | timeout -s KILL 60 \"$0\" --store \"$1\" import /dev/stdin\(flag)")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(String(decoding: run.stdout, as: UTF8.self)
                == "imported 1 collections: added 50, changed 0, removed \(replace ? 1 : 0), unchanged 0\n")
            #expect(try await tool.runOnStore(["list", "c"]).outputLines.count == 50)
        }
    }

    @Test func `a FIFO is read once, so an import into a new store needs one writer`() async throws {
        try await withTool { tool in
            let fifo = tool.directory.appendingPathComponent("input.fifo").path
            #expect(mkfifo(fifo, 0o600) == 0)
            let run = try await shell(
                tool, "cat \"$2\" > \"\(fifo)\" & timeout -s KILL 60 \"$0\" --store \"$1\" import \"\(fifo)\"; status=$?; wait; exit $status")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try await tool.runOnStore(["list", "c"]).outputLines.count == 50)
        }
    }

    @Test func `import with replace keeps the collection's declared indexes and item version`() async throws {
        struct Note: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var title: String
        }
        try await withTool { tool in
            let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            let notes = RecordRepository<Note>(store: store, collection: "notes", itemVersion: 3, migrations: [])
            try await notes.save(Note(id: "a", title: "first"))
            await store.close()
            #expect(try await tool.runOnStore(["index", "notes", "--add", "title"]).status == 0)
            let file = try tool.file("notes.json", #"{"collections":{"notes":{"b":{"id":"b","title":"second"}}}}"#)

            let result = try await tool.runOnStore(["import", file, "--replace"])
            #expect(result.output == "imported 1 collections: added 1, changed 0, removed 1, unchanged 0\n", "\(result.stderr)")
            #expect(try await tool.runOnStore(["index", "notes"]).output == "title\n")
            let check = try await tool.runOnStore(["check"]).outputLines
            #expect(check.contains("item version: notes 3"), "\(check)")
            let reopened = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            let loaded = try await RecordRepository<Note>(store: reopened, collection: "notes", itemVersion: 3, migrations: []).load()
            #expect(loaded.map(\.title) == ["second"])
        }
    }

    @Test(arguments: [false, true])
    func `an import onto a directory at the store path is refused before reading, dry run or not`(dryRun: Bool) async throws {
        try await withTool { tool in
            try FileManager.default.createDirectory(atPath: tool.storePath, withIntermediateDirectories: false)
            let file = try tool.file("in.json", #"{"collections":{"c":{"a":1}}}"#)
            let result = try await tool.runOnStore(["import", file] + (dryRun ? ["--dry-run"] : []))
            #expect(result.status == 69)
            #expect(result.stderr == "recordkeeper: \(tool.storePath) is a directory, not a store file\n")
            #expect(result.output.isEmpty)
        }
    }

    @Test func `an import whose summary cannot be written says its write was kept`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "c", "old", "1"]).status == 0)
            // Standard output is /dev/full: the summary after the commit fails with ENOSPC.
            let run = try await shell(tool, "exec \"$0\" --store \"$1\" import \"$2\" > /dev/full")
            #expect(run.status == 74)
            #expect(run.stderr.contains("cannot write to standard output"), "\(run.stderr)")
            #expect(run.stderr.contains("the import's write was committed and is kept: only its output was lost"), "\(run.stderr)")
            #expect(try await tool.runOnStore(["list", "c"]).outputLines.count == 51)

            // A command that wrote nothing before its output failed says nothing of the kind.
            let export = try await shell(tool, "exec \"$0\" --store \"$1\" export > /dev/full")
            #expect(export.status == 74)
            #expect(!export.stderr.contains("committed"), "\(export.stderr)")
        }
    }
}
