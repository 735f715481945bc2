import Foundation
import Testing

/// `list --where/--order/--limit` and `index`, through the built binary.
@Suite struct QueryCommandTests {
    static let changes = #"""
        {"upserts": {
            "a": {"n": 3, "s": "pear", "due": "2026-01-02"},
            "b": {"n": 1, "s": "apple", "due": "2026-01-01"},
            "c": {"n": 2, "s": "3", "due": "2026-01-03"},
            "d": {"n": 2, "s": "fig"}
        }}
        """#

    func filled(_ tool: ToolRunner) async throws {
        let file = try tool.file("changes.json", Self.changes)
        #expect(try await tool.runOnStore(["apply", "items", file]).status == 0)
    }

    func keys(_ result: ToolResult) -> [String] {
        result.outputLines.filter { !$0.isEmpty }.map { $0.split(separator: "\t").first.map(String.init) ?? "" }
    }

    @Test func `list with where, order and limit prints the query's records in its order`() async throws {
        try await withTool { tool in
            try await filled(tool)
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", "n >= 2"])) == ["a", "c", "d"])
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", "n>=2", "--where", "s != fig"])) == ["a", "c"])
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", "s = 3"])) == [], "3 is the number 3")
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", #"s = "3""#])) == ["c"])
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", "s = pear"])) == ["a"])
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", #"s != ">x""#])).count == 4, "quoted: text")
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", "due = null"])) == ["d"])
            #expect(keys(try await tool.runOnStore(["list", "items", "--order", "n:desc"])) == ["a", "d", "c", "b"])
            #expect(keys(try await tool.runOnStore(["list", "items", "--order", "n", "--limit", "2"])) == ["b", "c"])
            let values = try await tool.runOnStore(["list", "items", "--where", "due < 2026-01-02", "--values"])
            #expect(values.outputLines.count == 1)
            #expect(values.outputLines.first?.hasPrefix("b\t") == true)
            #expect(values.outputLines.first?.hasSuffix(#"{"n":1,"s":"apple","due":"2026-01-01"}"#) == true)
        }
    }

    @Test(arguments: ["n", "n ~ 3", "n = ", "n[0] = 1", " = 3", "n != ", "n = {\"a\":1}", "n <> 1", "n => 5", "n == 1", "n < >1"])
    func `a malformed predicate exits 64 with the reason`(predicate: String) async throws {
        try await withTool { tool in
            try await filled(tool)
            let result = try await tool.runOnStore(["list", "items", "--where", predicate])
            #expect(result.status == 64, "\(result.stderr)")
            #expect(result.stderr.contains("--where"), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func `a malformed order or limit exits 64`() async throws {
        try await withTool { tool in
            try await filled(tool)
            #expect(try await tool.runOnStore(["list", "items", "--order", "n:down"]).status == 64)
            #expect(try await tool.runOnStore(["list", "items", "--limit", "0"]).status == 64)
            #expect(try await tool.runOnStore(["list", "missing", "--limit", "1"]).status == 66)
        }
    }

    @Test func `index lists, adds and drops declared indexes`() async throws {
        try await withTool { tool in
            try await filled(tool)
            #expect(try await tool.runOnStore(["index", "items"]).output == "")
            #expect(try await tool.runOnStore(["index", "items", "--add", "n", "--add", "due"]).output == "due\nn\n")
            #expect(try await tool.runOnStore(["index", "items"]).output == "due\nn\n")
            #expect(keys(try await tool.runOnStore(["list", "items", "--where", "n = 2", "--order", "s"])) == ["c", "d"])
            #expect(try await tool.runOnStore(["index", "items", "--drop", "n"]).output == "due\n")
            #expect(try await tool.runOnStore(["index", "items", "--add", "a b"]).status == 64)
        }
    }

    @Test func `adding an index over a value that is not JSON exits 65 naming the key and declares nothing`() async throws {
        try await withTool { tool in
            try await filled(tool)
            #expect(try await tool.runOnStore(["put", "items", "b2", "plain text"]).status == 0)
            let refused = try await tool.runOnStore(["index", "items", "--add", "n"])
            #expect(refused.status == 65, "\(refused.stderr)")
            #expect(refused.stderr.hasPrefix("recordkeeper: Could not change the indexes of collection \"items\" (key \"b2\")"),
                    "\(refused.stderr)")
            #expect(refused.stderr.contains("payload is not JSON"), "\(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1)
            #expect(refused.stdout.isEmpty)
            #expect(try await tool.runOnStore(["index", "items"]).output == "", "no index was declared")
            #expect(try await tool.runOnStore(["put", "items", "e", "more text"]).status == 0)
        }
    }

    @Test func `index of a missing collection exits 66 and dropping an undeclared index says nothing was dropped`() async throws {
        try await withTool { tool in
            try await filled(tool)
            let missing = try await tool.runOnStore(["index", "nothing"])
            #expect(missing.status == 66)
            #expect(missing.stderr == "recordkeeper: no collection \"nothing\" in \(tool.storePath)\n")
            #expect(missing.stdout.isEmpty)
            #expect(try await tool.runOnStore(["list", "nothing"]).status == 66, "as list says")

            #expect(try await tool.runOnStore(["index", "items", "--add", "n"]).status == 0)
            let undeclared = try await tool.runOnStore(["index", "items", "--drop", "s"])
            #expect(undeclared.status == 0)
            #expect(undeclared.stderr == "recordkeeper: no index on \"s\" in \"items\"; nothing was dropped\n")
            #expect(undeclared.output == "n\n", "stdout stays the field list")
            let quiet = try await tool.runOnStore(["--quiet", "index", "items", "--drop", "s"])
            #expect(quiet.status == 0)
            #expect(quiet.stderr.isEmpty)
            let elsewhere = try await tool.runOnStore(["index", "nothing", "--drop", "n"])
            #expect(elsewhere.status == 0, "like delete of a record in a missing collection")
            #expect(elsewhere.stderr == "recordkeeper: no index on \"n\" in \"nothing\"; nothing was dropped\n")
            #expect(elsewhere.stdout.isEmpty)
            #expect(try await tool.runOnStore(["collections"]).outputLines.map { $0.split(separator: "\t")[0] } == ["items"],
                    "no collection was created")
            #expect(try await tool.runOnStore(["index", "items"]).output == "n\n")
        }
    }
}
