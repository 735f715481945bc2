import TestHelpers
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Files the tool creates are its user's alone: `export --output` writes 0600 and keeps an
/// existing file's mode, and `import -` never leaves standard input readable in the shared
/// temporary directory.
@Suite struct ToolFilesTests {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func `export --output creates a file only its owner can read`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "notes", "today", #""milk""#]).status == 0)
            let output = tool.directory.appendingPathComponent("export.json").path
            let result = try await tool.runOnStore(["export", "--output", output])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try mode(output) == 0o600)
        }
    }

    @Test(arguments: [0o600, 0o640, 0o400])
    func `export --output over an existing file keeps that file's mode`(existing: Int) async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "notes", "today", #""milk""#]).status == 0)
            let output = try tool.file("export.json", "old")
            #expect(chmod(output, mode_t(existing)) == 0)
            let result = try await tool.runOnStore(["export", "--output", output])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try mode(output) == existing)
            #expect(try String(contentsOfFile: output, encoding: .utf8).contains("milk"))
            // Nothing else was left beside it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: tool.directory.path).sorted()
                == ["export.json", "store.sqlite", "store.sqlite-observers"])
        }
    }

    #if os(Linux)  // It watches the tool's open files in /proc.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd"), "needs /proc to see the tool's open files"))
    func `import from standard input leaves nothing in the temporary directory, even when killed`() async throws {
        try await withTemporaryDirectory { directory in
            // The shared temporary directory, as /tmp is: anyone may list it.
            let shared = directory.appendingPathComponent("tmp", isDirectory: true)
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
            #expect(chmod(shared.path, 0o1777) == 0)
            let outputs = directory.appendingPathComponent("outputs", isDirectory: true)
            try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
            let store = directory.appendingPathComponent("new.sqlite").path
            // A new store: the import reads its input twice, so standard input is kept meanwhile.
            let tool = try ToolProcess(
                ["import", "-", "--store", store], in: directory, outputDirectory: outputs,
                environment: ["TMPDIR": shared.path])
            try tool.start()
            tool.input.fileHandleForWriting.write(Data(#"{"collection":"c","key":"secret","value":"do not share"}"#.utf8))
            // The tool holds its copy of standard input open: then nothing may be visible.
            try await ToolProcess.waitUntil("the tool opening its copy of standard input") {
                tool.openPaths().contains { $0.hasPrefix(shared.path) }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: shared.path).isEmpty)
            tool.send(SIGKILL)
            try await tool.waitForExit()
            #expect(try FileManager.default.contentsOfDirectory(atPath: shared.path).isEmpty)
            #expect(!FileManager.default.fileExists(atPath: store))
        }
    }
    #endif

    @Test func `import from standard input into a new store still works and leaves nothing behind`() async throws {
        try await withTemporaryDirectory { directory in
            let shared = directory.appendingPathComponent("tmp", isDirectory: true)
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
            let work = directory.appendingPathComponent("work", isDirectory: true)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            var tool = ToolRunner(directory: work)
            tool.environment["TMPDIR"] = shared.path
            let input = Data((#"{"collection":"c","key":"a","value":1}"# + "\n" + #"{"collection":"c","key":"b","value":2}"# + "\n").utf8)
            for arguments in [["import", "-"], ["import", "-", "--replace"]] {
                let result = try await tool.runOnStore(arguments, input: input)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try await tool.runOnStore(["get", "c", "b"]).output == "2\n")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: shared.path).isEmpty)
        }
    }
}
