import RecordKeeperTestSupport
import Foundation
import Testing

/// Where the store is, and that reading never creates one.
@Suite struct StoreLocationTests {
    @Test func `the store defaults to records.sqlite in the current directory`() throws {
        try withTool { tool throws in
            #expect(try tool.run(["put", "c", "k", "1"]).status == 0)
            #expect(FileManager.default.fileExists(atPath: tool.directory.appendingPathComponent("records.sqlite").path))
            #expect(try tool.run(["get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `the environment variable names the store and the option overrides it`() throws {
        try withTemporaryDirectory { directory throws in
            let fromEnvironment = directory.appendingPathComponent("env.sqlite").path
            let tool = ToolRunner(directory: directory, environment: ["RECORDKEEPER_STORE": fromEnvironment])
            try tool.run(["put", "c", "k", "1"])
            #expect(FileManager.default.fileExists(atPath: fromEnvironment))
            try tool.run(["--store", "option.sqlite", "put", "c", "k", "2"])
            #expect(try tool.run(["get", "c", "k"]).output == "1\n")
            #expect(try tool.run(["get", "c", "k", "--store", "option.sqlite"]).output == "2\n")
        }
    }

    @Test(arguments: [["collections"], ["list", "c"], ["get", "c", "k"], ["export"], ["check"], ["info"],
                      ["delete", "c", "k"]])
    func `reading a missing store exits 66 and creates nothing`(arguments: [String]) throws {
        try withTool { tool throws in
            let result = try tool.runOnStore(arguments)
            #expect(result.status == 66)
            #expect(result.stderr.hasPrefix("recordkeeper: no store at \(tool.storePath)"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: tool.directory.path).isEmpty)
        }
    }

    @Test func `a dry-run import into a missing store creates nothing`() throws {
        try withTool { tool throws in
            let file = try tool.file("in.ndjson", #"{"collection":"c","key":"k","value":1}"# + "\n")
            let result = try tool.runOnStore(["import", file, "--dry-run"])
            #expect(result.status == 0)
            #expect(result.output.contains("would add 1, change 0 and remove 0 records"))
            #expect(result.output.hasSuffix("(no store at \(tool.storePath) yet; import creates it)\n"))
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }

    @Test func `reading commands leave an empty file empty and writing ones initialize it`() throws {
        try withTool { tool throws in
            try Data().write(to: URL(fileURLWithPath: tool.storePath))
            for arguments in [["collections"], ["get", "c", "k"], ["export"], ["check"], ["delete", "c", "k"]] {
                let result = try tool.runOnStore(arguments)
                #expect(result.status == 66)
                #expect(result.stderr.contains("is an empty file, not a store yet"))
            }
            #expect(try tool.runOnStore(["import", "-", "--dry-run"], input: Data("{}".utf8)).status == 65)
            #expect(try Data(contentsOf: URL(fileURLWithPath: tool.storePath)).isEmpty)
            #expect(try tool.runOnStore(["put", "c", "k", "1"]).status == 0)
            #expect(try tool.runOnStore(["get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `a directory in place of the store is refused`() throws {
        try withTool { tool throws in
            try FileManager.default.createDirectory(atPath: tool.storePath, withIntermediateDirectories: false)
            #expect(try tool.runOnStore(["collections"]).status == 69)
            #expect(try tool.runOnStore(["put", "c", "k", "1"]).status == 69)
        }
    }
}
