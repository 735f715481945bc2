import TestHelpers
import Foundation
import Testing

/// Where the store is, and that reading never creates one.
@Suite struct StoreLocationTests {
    @Test func `the store defaults to records.sqlite in the current directory`() async throws {
        try await withTool { tool async throws in
            #expect(try await tool.run(["put", "c", "k", "1"]).status == 0)
            #expect(FileManager.default.fileExists(atPath: tool.directory.appendingPathComponent("records.sqlite").path))
            #expect(try await tool.run(["get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `a one-letter store path that is a link to the store is the store, side files beside it`() async throws {
        try await withTool { tool async throws in
            #expect(try await tool.run(["--store", "real.sqlite", "put", "c", "k", "1"]).status == 0)
            #expect(symlink("real.sqlite", tool.directory.appendingPathComponent("s").path) == 0)
            let put = try await tool.run(["--store", "s", "put", "c", "j", "2"])
            #expect(put.status == 0, "\(put.stderr)")
            #expect(try await tool.run(["--store", "real.sqlite", "list", "c"]).outputLines.count == 2)
            // The link's neighbour named like a side file is not the store's: exported to.
            let export = try await tool.run(["--store", "s", "export", "--output", "s-wal"])
            #expect(export.status == 0, "\(export.stderr)")
            #expect(try await tool.run(["--store", "s", "export", "--output", "real.sqlite-wal"]).status == 73)
        }
    }

    @Test func `the environment variable names the store and the option overrides it`() async throws {
        try await withTemporaryDirectory { directory in
            let fromEnvironment = directory.appendingPathComponent("env.sqlite").path
            let tool = ToolRunner(directory: directory, environment: ["RECORDKEEPER_STORE": fromEnvironment])
            try await tool.run(["put", "c", "k", "1"])
            #expect(FileManager.default.fileExists(atPath: fromEnvironment))
            try await tool.run(["--store", "option.sqlite", "put", "c", "k", "2"])
            #expect(try await tool.run(["get", "c", "k"]).output == "1\n")
            #expect(try await tool.run(["get", "c", "k", "--store", "option.sqlite"]).output == "2\n")
        }
    }

    @Test(arguments: [["collections"], ["list", "c"], ["get", "c", "k"], ["export"], ["check"], ["info"],
                      ["delete", "c", "k"]])
    func `reading a missing store exits 66 and creates nothing`(arguments: [String]) async throws {
        try await withTool { tool in
            let result = try await tool.runOnStore(arguments)
            #expect(result.status == 66)
            #expect(result.stderr.hasPrefix("recordkeeper: no store at \(tool.storePath)"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: tool.directory.path).isEmpty)
        }
    }

    @Test(arguments: ["s/new.sqlite", "q/r/n.sqlite", "./t/x.sqlite", "ab/x.sqlite"])
    func `import creates a store under missing relative directories, and a failed one removes them`(path: String)
        async throws
    {
        try await withTool { tool in
            let good = try tool.file("in.ndjson", #"{"collection":"c","key":"k","value":1}"# + "\n")
            let bad = try tool.file("bad.ndjson", #"{"collection":"c","key":"k","value":1}"# + "\nnot json\n")
            let top = path.split(separator: "/").first { $0 != "." }.map(String.init) ?? path
            let failed = try await tool.run(["--store", path, "import", bad])
            #expect(failed.status == 65, "\(failed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: tool.directory.appendingPathComponent(top).path))

            let result = try await tool.run(["--store", path, "import", good])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try await tool.run(["--store", path, "get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `a dry-run import into a missing store creates nothing`() async throws {
        try await withTool { tool in
            let file = try tool.file("in.ndjson", #"{"collection":"c","key":"k","value":1}"# + "\n")
            let result = try await tool.runOnStore(["import", file, "--dry-run"])
            #expect(result.status == 0)
            #expect(result.output.contains("would add 1, change 0 and remove 0 records"))
            #expect(result.output.hasSuffix("(no store at \(tool.storePath) yet; import creates it)\n"))
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }

    @Test func `reading commands leave an empty file empty and writing ones initialize it`() async throws {
        try await withTool { tool in
            try Data().write(to: URL(fileURLWithPath: tool.storePath))
            for arguments in [["collections"], ["get", "c", "k"], ["export"], ["check"], ["delete", "c", "k"]] {
                let result = try await tool.runOnStore(arguments)
                #expect(result.status == 66)
                #expect(result.stderr.contains("is an empty file, not a store yet"))
            }
            #expect(try await tool.runOnStore(["import", "-", "--dry-run"], input: Data("{}".utf8)).status == 65)
            #expect(try Data(contentsOf: URL(fileURLWithPath: tool.storePath)).isEmpty)
            #expect(try await tool.runOnStore(["put", "c", "k", "1"]).status == 0)
            #expect(try await tool.runOnStore(["get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `a link to an empty file is an empty file, not a store`() async throws {
        try await withTool { tool in
            let target = URL(fileURLWithPath: tool.storePath).deletingLastPathComponent().appendingPathComponent("empty.sqlite")
            try Data().write(to: target)
            try FileManager.default.createSymbolicLink(atPath: tool.storePath, withDestinationPath: target.path)
            for arguments in [["collections"], ["conflicts"]] {
                let result = try await tool.runOnStore(arguments)
                #expect(result.status == 66, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("is an empty file, not a store yet"), "\(arguments): \(result.stderr)")
            }
            #expect(try Data(contentsOf: target).isEmpty)
        }
    }

    @Test func `a directory in place of the store is refused`() async throws {
        try await withTool { tool in
            try FileManager.default.createDirectory(atPath: tool.storePath, withIntermediateDirectories: false)
            #expect(try await tool.runOnStore(["collections"]).status == 69)
            #expect(try await tool.runOnStore(["put", "c", "k", "1"]).status == 69)
        }
    }

    @Test func `a FIFO or a device in place of the store is refused, not taken for an empty file`() async throws {
        try await withTool { tool in
            #expect(mkfifo(tool.storePath, 0o600) == 0)
            for (store, kind) in [(tool.storePath, "a FIFO"), ("/dev/null", "a device")] {
                for command in [["list", "c"], ["put", "c", "k", "1"], ["sync", "--space", "s", "--collections", "c", "--server", "host=/nonexistent"]] {
                    let result = try await tool.run(["--store", store] + command)
                    #expect(result.status == 69, "\(command)")
                    #expect(result.stderr == "recordkeeper: \(store) is \(kind), not a store file\n", "\(command)")
                }
            }
        }
    }
}
