import Foundation
import Testing

/// `apply COLLECTION FILE|-`.
@Suite struct ApplyCommandTests {
    @Test func `a change set upserts and removes in one transaction`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "old", "1"])
            try await tool.runOnStore(["put", "users", "kept", "2"])
            let file = try tool.file("changes.json", """
                {
                  "upserts": {"alice": {"name": "Alice"}, "bob": "text", "bin": {"$base64": "AAH/"}},
                  "removals": ["old", "never-existed"]
                }
                """)
            let result = try await tool.runOnStore(["apply", "users", file])
            #expect(result.status == 0)
            #expect(result.output == "applied to \"users\": added 3, changed 0, removed 1, unchanged 0, already absent 1\n")
            #expect(try await tool.runOnStore(["get", "users", "alice", "--raw"]).output == #"{"name":"Alice"}"#)
            #expect(try await tool.runOnStore(["get", "users", "bob", "--raw"]).output == #""text""#)
            #expect(try await tool.runOnStore(["get", "users", "bin", "--raw"]).stdout == Data([0, 1, 255]))
            #expect(try await tool.runOnStore(["get", "users", "old"]).status == 66)
            #expect(try await tool.runOnStore(["get", "users", "kept"]).output == "2\n")
        }
    }

    @Test func `removing three keys of which one existed reports one removed and two already absent`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "b", "1"])
            let file = try tool.file("changes.json", #"{"removals": ["a", "b", "c"]}"#)
            let result = try await tool.runOnStore(["apply", "c", file])
            #expect(result.status == 0)
            #expect(result.output == "applied to \"c\": added 0, changed 0, removed 1, unchanged 0, already absent 2\n")
        }
    }

    @Test func `removing keys of a collection that does not exist creates nothing`() async throws {
        try await withTool { tool in
            let file = try tool.file("changes.json", #"{"removals": ["x", "y"]}"#)
            let before = try await tool.runOnStore(["apply", "new", file])
            #expect(before.status == 0, "\(before.stderr)")
            #expect(before.output == "applied to \"new\": added 0, changed 0, removed 0, unchanged 0, already absent 2; "
                    + "nothing was written\n")
            #expect(!FileManager.default.fileExists(atPath: tool.storePath), "no store was created")
            try await tool.runOnStore(["put", "users", "alice", "1"])
            #expect(try await tool.runOnStore(["apply", "new", file]).status == 0)
            #expect(try await tool.runOnStore(["collections"]).outputLines == ["users\t1\t1"], "no collection was created")
            #expect(try await tool.runOnStore(["list", "new"]).status == 66)
        }
    }

    @Test func `an empty change set says it writes no record and establishes the collection`() async throws {
        try await withTool { tool in
            let result = try await tool.runOnStore(["apply", "fresh", "-"], input: Data("{}".utf8))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.output == "applied to \"fresh\": added 0, changed 0, removed 0, unchanged 0, already absent 0; "
                    + "the change set is empty: no record was written, and the collection is established\n")
            #expect(try await tool.runOnStore(["collections"]).outputLines == ["fresh\t0\t0"])
        }
    }

    @Test func `re-applying an identical upsert reports it unchanged and writes nothing`() async throws {
        try await withTool { tool in
            let file = try tool.file("changes.json", #"{"upserts": {"k": [1, 2], "n": 3}}"#)
            let first = try await tool.runOnStore(["apply", "c", file])
            #expect(first.output == "applied to \"c\": added 2, changed 0, removed 0, unchanged 0, already absent 0\n")
            let again = try await tool.runOnStore(["apply", "c", file])
            #expect(again.status == 0)
            #expect(again.output == "applied to \"c\": added 0, changed 0, removed 0, unchanged 2, already absent 0; "
                    + "nothing was written\n")
            #expect(try await tool.runOnStore(["list", "c"]).output == "k\t5\t1\nn\t1\t1\n")
            let changed = try tool.file("changed.json", #"{"upserts": {"k": [1, 2], "n": 4}}"#)
            #expect(try await tool.runOnStore(["apply", "c", changed]).output
                    == "applied to \"c\": added 0, changed 1, removed 0, unchanged 1, already absent 0\n")
        }
    }

    @Test func `a change set can come from standard input`() async throws {
        try await withTool { tool in
            let result = try await tool.runOnStore(["apply", "c", "-"], input: Data(#"{"upserts":{"k":[1,2]}}"#.utf8))
            #expect(result.status == 0)
            #expect(try await tool.runOnStore(["get", "c", "k"]).output == "[1,2]\n")
        }
    }

    @Test func `malformed JSON reports line and column and writes nothing`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "existing", "1"])
            let file = try tool.file("bad.json", "{\n  \"upserts\": {\n    \"a\": 1,\n    \"b\": tru\n  }\n}\n")
            let result = try await tool.runOnStore(["apply", "c", file])
            #expect(result.status == 65)
            #expect(result.stderr == "recordkeeper: \(file): line 4, column 10: invalid literal, expected true; nothing was written\n")
            #expect(try await tool.runOnStore(["list", "c"]).outputLines.count == 1)
        }
    }

    @Test func `a key both upserted and removed is reported where it is removed`() async throws {
        try await withTool { tool in
            let file = try tool.file("changes.json", "{\"upserts\": {\"k\": 1},\n \"removals\": [\"a\",  \"k\"]}")
            let result = try await tool.runOnStore(["apply", "c", file])
            #expect(result.status == 65)
            #expect(result.stderr == "recordkeeper: \(file): line 2, column 21: key \"k\" is both upserted and removed; nothing was written\n")
        }
    }

    @Test func `a list given twice in a change set is refused, nothing written`() async throws {
        try await withTool { tool in
            for text in [#"{"upserts": {"a": 1}, "upserts": {"b": 2}}"#, #"{"removals": ["z"], "removals": ["b"]}"#] {
                let file = try tool.file("twice.json", text)
                let result = try await tool.runOnStore(["apply", "c", file])
                #expect(result.status == 65, "\(text)")
                #expect(result.stderr.contains("appears twice in the change set"), "\(result.stderr)")
            }
            #expect(try await tool.runOnStore(["list", "c"]).status == 66, "nothing was written")
        }
    }

    @Test func `errors never echo payload bytes`() async throws {
        try await withTool { tool in
            let secret = "s3cr3t-payload"
            let file = try tool.file("bad.json", #"{"upserts": {"k": "\#(secret)" "#)
            let result = try await tool.runOnStore(["apply", "c", file])
            #expect(result.status == 65)
            #expect(!result.stderr.contains(secret))
        }
    }

    @Test(arguments: [
        #"{"upserts": {"k": 1}, "removals": ["k"]}"#,
        #"{"upserts": {"k": 1, "k": 2}}"#,
        #"{"upserts": {"": 1}}"#,
        #"{"removals": [1]}"#,
        #"{"other": {}}"#,
        #"{"upserts": {"k": {"$base64": "not base64!"}}}"#,
        #"{"upserts": {}} trailing"#,
        "",
    ])
    func `invalid change sets exit 65 and write nothing`(changeSet: String) async throws {
        try await withTool { tool in
            let file = try tool.file("changes.json", changeSet)
            let result = try await tool.runOnStore(["apply", "c", file])
            #expect(result.status == 65)
            #expect(result.stderr.contains("nothing was written"))
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }

    @Test func `a missing change set file exits 66`() async throws {
        try await withTool { tool in
            let result = try await tool.runOnStore(["apply", "c", "missing.json"])
            #expect(result.status == 66)
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }
}
