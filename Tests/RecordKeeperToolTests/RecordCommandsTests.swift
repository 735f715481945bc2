import Foundation
import Testing

/// `put`, `get`, `list`, `collections`, `delete` and help, through the built binary.
@Suite struct RecordCommandsTests {
    @Test func `put creates the store and get prints the value`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "users", "alice", #"{"name":"Alice"}"#]).status == 0)
            #expect(FileManager.default.fileExists(atPath: tool.storePath))
            let result = try await tool.runOnStore(["get", "users", "alice"])
            #expect(result.status == 0)
            #expect(result.output == "{\"name\":\"Alice\"}\n")
            #expect(result.stderr.isEmpty)
        }
    }

    @Test func `bytes that are not JSON print as marked base64 and raw prints them unchanged`() async throws {
        try await withTool { tool async throws in
            let bytes = Data([0x00, 0x01, 0xFF, 0x0A])
            #expect(try await tool.runOnStore(["put", "blobs", "b", "-"], input: bytes).status == 0)
            #expect(try await tool.runOnStore(["get", "blobs", "b"]).output == "base64:AAH/Cg==\n")
            #expect(try await tool.runOnStore(["get", "blobs", "b", "--raw"]).stdout == bytes)
        }
    }

    @Test func `put stores the value exactly unless asked for JSON or base64`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "spaced", #"{"a": 1}"#])
            try await tool.runOnStore(["put", "c", "json", "--json", #"{"a": 1}"#])
            try await tool.runOnStore(["put", "c", "b64", "--base64", "aGk="])
            #expect(try await tool.runOnStore(["get", "c", "spaced", "--raw"]).output == #"{"a": 1}"#)
            #expect(try await tool.runOnStore(["get", "c", "json", "--raw"]).output == #"{"a":1}"#)
            #expect(try await tool.runOnStore(["get", "c", "b64", "--raw"]).output == "hi")
        }
    }

    @Test func `values starting with a dash are stored: negative numbers as they are, others after --`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "notes", "n", "-5"]).status == 0)
            #expect(try await tool.runOnStore(["put", "notes", "j", "-1.5e3", "--json"]).status == 0)
            // Options go before `--`: everything after it is an argument.
            #expect(try await tool.run(["--store", tool.storePath, "put", "notes", "w", "--", "-rf"]).status == 0)
            #expect(try await tool.runOnStore(["get", "notes", "n", "--raw"]).output == "-5")
            #expect(try await tool.runOnStore(["get", "notes", "j"]).output == "-1.5e3\n")
            #expect(try await tool.runOnStore(["get", "notes", "w", "--raw"]).output == "-rf")
            let refused = try await tool.runOnStore(["put", "notes", "x", "-rf"])
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("goes after '--'"))
        }
    }

    @Test func `put refuses bad JSON or base64 with exit 65 and writes nothing`() async throws {
        try await withTool { tool in
            let json = try await tool.runOnStore(["put", "c", "k", "--json", "{\"a\":"])
            #expect(json.status == 65)
            #expect(json.stderr.contains("line 1, column 6"))
            #expect(try await tool.runOnStore(["put", "c", "k", "--base64", "%%%"]).status == 65)
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }

    @Test func `put --base64 accepts line-wrapped base64 and still refuses other characters`() async throws {
        try await withTool { tool in
            let bytes = Data((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) })
            // As `base64` writes it: lines of 76 characters, a newline after the last.
            let wrapped = bytes.base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n"
            #expect(wrapped.split(separator: "\n").count == 4)
            #expect(try await tool.runOnStore(["put", "blobs", "piped", "--base64", "-"], input: Data(wrapped.utf8)).status == 0)
            let crlf = bytes.base64EncodedString(options: [.lineLength64Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
            #expect(try await tool.runOnStore(["put", "blobs", "argument", "--base64", " \t" + crlf + " \n"]).status == 0)
            #expect(try await tool.runOnStore(["get", "blobs", "piped", "--raw"]).stdout == bytes)
            #expect(try await tool.runOnStore(["get", "blobs", "argument", "--raw"]).stdout == bytes)
            for garbage in ["aGk=!", "aG\u{2028}k=", "aG k", "a-Gk=", "====", "AA=A", "A===", "AB=="] {
                let refused = try await tool.runOnStore(["put", "blobs", "bad", "--base64", garbage])
                #expect(refused.status == 65, "\(garbage): \(refused.stderr)")
                #expect(refused.stderr == "recordkeeper: VALUE is not valid base64; nothing was written\n")
            }
            #expect(try await tool.runOnStore(["get", "blobs", "bad"]).status == 66)
        }
    }

    @Test func `collections and list show counts, sizes, versions and values`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "bob", "\"b\""])
            try await tool.runOnStore(["put", "users", "alice", "[1]"])
            try await tool.runOnStore(["put", "notes", "tab\tkey", "x"])
            #expect(try await tool.runOnStore(["collections"]).outputLines == ["notes\t1\t1", "users\t2\t6"])
            let list = try await tool.runOnStore(["list", "users"]).outputLines
            #expect(list.count == 2)
            #expect(list[0].hasPrefix("alice\t3\t"))
            #expect(list[1].hasPrefix("bob\t3\t"))
            let values = try await tool.runOnStore(["list", "users", "--values"]).outputLines
            #expect(values[0].hasSuffix("\t[1]"))
            #expect(try await tool.runOnStore(["list", "notes", "--values"]).outputLines.first?
                .hasPrefix("tab\\tkey\t1\t") == true)
        }
    }

    @Test func `keys and collection names with a backslash list unambiguously, the backslash doubled`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "notes", #"a\tb"#, "1"])  // a backslash and a t
            try await tool.runOnStore(["put", "notes", "a\tb", "2"])  // a tab
            try await tool.runOnStore(["put", #"c\d"#, "k", "3"])
            // In key order: the tab (0x09) sorts before the backslash (0x5C).
            let keys = { (result: ToolResult) in result.outputLines.map { $0.split(separator: "\t")[0] } }
            #expect(keys(try await tool.runOnStore(["list", "notes"])) == ["a\\tb", #"a\\tb"#])
            #expect(keys(try await tool.runOnStore(["list", "notes", "--limit", "5"])) == ["a\\tb", #"a\\tb"#],
                    "a query lists keys the same way")
            #expect(try await tool.runOnStore(["collections"]).outputLines == [#"c\\d"# + "\t1\t1", "notes\t2\t2"])
            let missing = try await tool.runOnStore(["get", #"c\d"#, #"x\y"#])
            #expect(missing.stderr == #"recordkeeper: no record "x\\y" in collection "c\\d""# + "\n")
        }
    }

    @Test func `delete removes one record and says whether there was one, like the library`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", "1"])
            try await tool.runOnStore(["put", "users", "bob", "2"])
            let removed = try await tool.runOnStore(["delete", "users", "alice"])
            #expect(removed.status == 0)
            #expect(removed.output == "removed \"alice\" from \"users\"\n")
            #expect(try await tool.runOnStore(["get", "users", "alice"]).status == 66)
            #expect(try await tool.runOnStore(["get", "users", "bob"]).output == "2\n")
            let missing = try await tool.runOnStore(["delete", "users", "alice"])
            #expect(missing.status == 0, "deleting what is not stored is not an error")
            #expect(missing.output == "no record \"alice\" in \"users\"; nothing was removed\n")
            #expect(missing.stderr.isEmpty)
            #expect(try await tool.runOnStore(["delete", "nothing", "k"]).status == 0)
            #expect(try await tool.runOnStore(["collections"]).outputLines == ["users\t1\t1"], "no collection was created")
            #expect(try await tool.runOnStore(["--quiet", "delete", "users", "bob"]).output == "")
            let gone = try await tool.runOnStore(["delete", "users", "bob", "--if-version", "1"])
            #expect(gone.status == 75, "a conditional delete of a record that is gone is a conflict")
            #expect(gone.stderr.hasPrefix("recordkeeper: Could not delete from collection \"users\": no record \"bob\" "
                                          + "(expected version 1); nothing was removed."), "\(gone.stderr)")
        }
    }

    @Test func `keys are normalized to NFC: a decomposed and a composed é are one record`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "notes", "e\u{301}", "1"])
            try await tool.runOnStore(["put", "notes", "\u{E9}", "2"])
            let lines = try await tool.runOnStore(["list", "notes"]).outputLines
            #expect(lines == ["\u{E9}\t1\t2"], "one record, at version 2: \(lines)")
            #expect(try await tool.runOnStore(["get", "notes", "e\u{301}"]).output == "2\n")
            #expect(Array(try await tool.runOnStore(["list", "notes"]).output.utf8.prefix(2)) == [0xC3, 0xA9], "stored as NFC")
        }
    }

    @Test func `conditional writes succeed on the listed version and conflict with exit 75 otherwise`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "c", "k", "1", "--if-version", "absent"]).status == 0)
            let again = try await tool.runOnStore(["put", "c", "k", "2", "--if-version", "absent"])
            #expect(again.status == 75)
            #expect(again.stderr.split(separator: "\n").count == 1)
            let version = try #require(try await tool.runOnStore(["list", "c"]).outputLines.first?.split(separator: "\t").last)
            #expect(try await tool.runOnStore(["put", "c", "k", "3", "--if-version", String(version)]).status == 0)
            #expect(try await tool.runOnStore(["put", "c", "k", "4", "--if-version", String(version)]).status == 75)
            #expect(try await tool.runOnStore(["delete", "c", "k", "--if-version", String(version)]).status == 75)
            #expect(try await tool.runOnStore(["get", "c", "k"]).output == "3\n")
            let current = try #require(try await tool.runOnStore(["list", "c"]).outputLines.first?.split(separator: "\t").last)
            #expect(try await tool.runOnStore(["delete", "c", "k", "--if-version", String(current)]).status == 0)
            #expect(try await tool.runOnStore(["get", "c", "k"]).status == 66)
            #expect(try await tool.runOnStore(["put", "c", "k", "5", "--if-version", "soon"]).status == 64)
            #expect(try await tool.runOnStore(["delete", "c", "k", "--if-version", "absent"]).status == 64)
        }
    }

    @Test func `a conditional write says what it found instead of what it expected`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "k", "1"])
            let exists = try await tool.runOnStore(["put", "c", "k", "2", "--if-version", "absent"])
            #expect(exists.status == 75)
            #expect(exists.stderr == "recordkeeper: Could not save to collection \"c\": \"k\" already exists, at version 1; "
                    + "nothing was written.\n")
            let stale = try await tool.runOnStore(["delete", "c", "k", "--if-version", "7"])
            #expect(stale.status == 75)
            #expect(stale.stderr.hasPrefix("recordkeeper: Could not delete from collection \"c\": \"k\" changed since it "
                                           + "was loaded (version 7, now 1); nothing was removed."))
            // A record that was never stored is not said to have been removed.
            let never = try await tool.runOnStore(["put", "c", "zz", "2", "--if-version", "3"])
            #expect(never.status == 75)
            #expect(never.stderr.hasPrefix("recordkeeper: Could not save to collection \"c\": no record \"zz\" "
                                           + "(expected version 3); nothing was written."), "\(never.stderr)")
            let neverDeleted = try await tool.runOnStore(["delete", "elsewhere", "zz", "--if-version", "3"])
            #expect(neverDeleted.status == 75)
            #expect(neverDeleted.stderr.hasPrefix("recordkeeper: Could not delete from collection \"elsewhere\": no record "
                                                  + "\"zz\" (expected version 3); nothing was removed."), "\(neverDeleted.stderr)")
            #expect(try await tool.runOnStore(["get", "c", "zz"]).status == 66)
        }
    }

    @Test func `writes to a damaged store name the key, with and without a condition`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "first", "1"])
            let url = URL(fileURLWithPath: tool.storePath)
            var bytes = try Data(contentsOf: url)
            try #require(bytes.count > 4096)
            bytes.replaceSubrange(4096..., with: Data(repeating: 0xFF, count: bytes.count - 4096))
            try bytes.write(to: url)
            for arguments in [["put", "c", "k", "2"], ["put", "c", "k", "2", "--if-version", "absent"], ["delete", "c", "k"]] {
                let result = try await tool.runOnStore(arguments)
                let verb = arguments[0] == "delete" ? "delete from" : "save to"
                #expect(result.status == 69, "\(arguments)")
                #expect(result.stderr.hasPrefix("recordkeeper: Could not \(verb) collection \"c\" (key \"k\") in store "),
                        "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("the database file is damaged"), "\(arguments)")
            }
        }
    }

    @Test func `missing records and collections exit 66 with one line`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", "1"])
            let record = try await tool.runOnStore(["get", "users", "zed"])
            #expect(record.status == 66)
            #expect(record.stderr.split(separator: "\n").count == 1)
            #expect(try await tool.runOnStore(["list", "nothing"]).status == 66)
            #expect(try await tool.runOnStore(["export", "nothing"]).status == 66)
        }
    }

    @Test func `usage errors exit 64 and point at help`() async throws {
        try await withTool { tool in
            let unknown = try await tool.run(["frobnicate"])
            #expect(unknown.status == 64)
            #expect(unknown.stderr == "recordkeeper: unknown command 'frobnicate' (see 'recordkeeper --help')\n")
            #expect(try await tool.run([]).status == 64)
            #expect(try await tool.run(["get", "users"]).stderr.contains("recordkeeper get --help"))
            #expect(try await tool.run(["list", "users", "--bogus"]).status == 64)
            #expect(try await tool.runOnStore(["get", "", "k"]).status == 64)
            #expect(try await tool.run(["export", "--format", "xml"]).status == 64)
        }
    }

    @Test func `help is available for the tool and for every command`() async throws {
        try await withTool { tool in
            let help = try await tool.run(["--help"])
            #expect(help.status == 0)
            #expect(help.output.contains("Commands:"))
            #expect(try await tool.run(["help"]).output == help.output)
            for command in ["collections", "list", "get", "put", "delete", "apply", "export", "import", "check", "info"] {
                let viaFlag = try await tool.run([command, "--help"])
                #expect(viaFlag.status == 0)
                #expect(viaFlag.output.contains("Usage: recordkeeper [--store PATH] \(command)"))
                #expect(try await tool.run(["help", command]).output == viaFlag.output)
            }
            #expect(!FileManager.default.fileExists(atPath: tool.directory.appendingPathComponent("records.sqlite").path))
        }
    }
}
