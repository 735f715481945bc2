import Foundation
import RecordKeeper
import Testing
@testable import RecordKeeperTool

/// `export` and `import`: formats, round trips, merge, replace, dry run, and bad input.
@Suite struct ExportImportTests {
    /// Payloads chosen to stress the value encoding: compact JSON, JSON with spaces, binary,
    /// empty, text, something that looks like the base64 marker, and awkward keys.
    private static let samples: [(collection: String, key: String, data: Data)] = [
        ("users", "alice", Data(#"{"name":"Alice","n":1.50}"#.utf8)),
        ("users", "bob", Data(#"{"name": "Bob"}"#.utf8)),
        ("users", "tab\tand\nnewline \"quoted\" é😀", Data(#""string""#.utf8)),
        ("blobs", "binary", Data([0, 1, 2, 255, 254, 10])),
        ("blobs", "empty", Data()),
        ("blobs", "text", Data("plain text".utf8)),
        ("blobs", "marker", Data(#"{"$base64":"aGk="}"#.utf8)),
        ("a:b", "c", Data("1".utf8)),
        ("a", "b:c", Data("2".utf8)),
    ]

    private func fill(_ tool: ToolRunner, store: String? = nil) async throws {
        for sample in Self.samples {
            let arguments = ["put", sample.collection, sample.key, "-", "--store", store ?? tool.storePath]
            #expect(try await tool.run(arguments, input: sample.data).status == 0)
        }
    }

    private func contents(_ tool: ToolRunner, store: String) async throws -> String {
        try await tool.run(["export", "--format", "ndjson", "--store", store]).output
    }

    @Test(arguments: ["json", "ndjson"])
    func `an export imports into a new store byte for byte`(format: String) async throws {
        try await withTool { tool in
            try await fill(tool)
            let exported = try await tool.runOnStore(["export", "--format", format])
            #expect(exported.status == 0)
            #expect(exported.stderr.isEmpty)
            let file = try tool.file("export.\(format)", exported.output)
            let copy = tool.directory.appendingPathComponent("copy.sqlite").path

            let imported = try await tool.run(["import", file, "--store", copy])
            #expect(imported.status == 0)
            #expect(imported.output == "imported 4 collections: added 9, changed 0, removed 0, unchanged 0\n")
            for sample in Self.samples {
                let value = try await tool.run(["get", sample.collection, sample.key, "--raw", "--store", copy])
                #expect(value.stdout == sample.data, "\(sample.collection)/\(sample.key)")
            }
            #expect(try await contents(tool, store: copy) == contents(tool, store: tool.storePath))
        }
    }

    @Test func `the JSON export is readable and compact JSON payloads appear as JSON`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", #"{"name":"Alice"}"#])
            try await tool.runOnStore(["put", "users", "bin", "--base64", "AAH/"])
            try await tool.runOnStore(["apply", "empty", "-"], input: Data("{}".utf8))
            let exported = try await tool.runOnStore(["export"]).output
            #expect(exported == """
                {
                  "collections": {
                    "empty": {},
                    "users": {
                      "alice": {"name":"Alice"},
                      "bin": {"$base64":"AAH/"}
                    }
                  }
                }

                """)
            let ndjson = try await tool.runOnStore(["export", "users", "--format", "ndjson"]).outputLines
            #expect(ndjson == [
                #"{"collection":"users"}"#,
                #"{"collection":"users","key":"alice","value":{"name":"Alice"}}"#,
                #"{"collection":"users","key":"bin","value":{"$base64":"AAH/"}}"#,
            ])
        }
    }

    @Test func `an empty collection survives a round trip`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["apply", "empty", "-"], input: Data("{}".utf8))
            let file = try tool.file("e.ndjson", try await tool.runOnStore(["export", "--format", "ndjson"]).output)
            let copy = tool.directory.appendingPathComponent("copy.sqlite").path
            #expect(try await tool.run(["import", file, "--store", copy]).status == 0)
            #expect(try await tool.run(["collections", "--store", copy]).output == "empty\t0\t0\n")
        }
    }

    @Test func `export to a file writes it whole and says so`() async throws {
        try await withTool { tool in
            try await fill(tool)
            let path = tool.directory.appendingPathComponent("out.ndjson").path
            let result = try await tool.runOnStore(["export", "--output", path])
            #expect(result.status == 0)
            #expect(result.output == "exported 9 records to \(path)\n")
            let written = try String(contentsOfFile: path, encoding: .utf8)
            #expect(written == (try await tool.runOnStore(["export", "--format", "ndjson"]).output))
            #expect(try FileManager.default.contentsOfDirectory(atPath: tool.directory.path)
                .filter { $0.contains(".partial-") }.isEmpty)
        }
    }

    @Test func `export --output - writes to standard output and creates no file named -`() async throws {
        try await withTool { tool in
            try await fill(tool)
            let toStdout = try await tool.runOnStore(["export", "--output", "-"])
            #expect(toStdout.status == 0, "\(toStdout.stderr)")
            #expect(toStdout.output == (try await tool.runOnStore(["export"]).output))
            #expect(!FileManager.default.fileExists(atPath: tool.directory.appendingPathComponent("-").path))
        }
    }

    @Test func `a whole-store export of a store whose last pages are damaged fails and writes nothing`() async throws {
        try await withTool { tool in
            var lines: [String] = []
            for index in 0..<3_000 { lines.append(#"{"collection":"notes","key":"n\#(String(format: "%05d", index))","value":{"text":"note number \#(index) with some text"}}"#) }
            for index in 0..<50 { lines.append(#"{"collection":"tags","key":"t\#(index)","value":\#(index)}"#) }
            let seed = try tool.file("seed.ndjson", lines.joined(separator: "\n") + "\n")
            #expect(try await tool.runOnStore(["import", seed]).status == 0)
            // Overwrite the file's last 3,000 bytes, as a failing disk might.
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: tool.storePath))
            let size = try handle.seekToEnd()
            try handle.seek(toOffset: size - 3_000)
            var generator = SystemRandomNumberGenerator()
            try handle.write(contentsOf: Data((0..<3_000).map { _ in UInt8.random(in: 0...255, using: &generator) }))
            try handle.close()
            let output = tool.directory.appendingPathComponent("all.json").path
            let exported = try await tool.runOnStore(["export", "--output", output])
            #expect(exported.status == 69, "\(exported.stderr)")
            #expect(exported.stderr.contains("damaged"), "\(exported.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
    }

    @Test func `an export never replaces the store's own file, a FIFO or a symbolic link`() async throws {
        try await withTool { tool in
            try await fill(tool)
            let before = try Data(contentsOf: URL(fileURLWithPath: tool.storePath))
            let own = try await tool.runOnStore(["export", "users", "--output", tool.storePath])
            #expect(own.status == 73)
            #expect(own.stderr.contains("is the store's own file"), "\(own.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: tool.storePath)) == before)
            // A side file that is not there yet, named relative to the working directory (the
            // store's): an export there would be a "-journal" SQLite might take for the store's.
            for suffix in ["-journal", "-wal", "-observers"] {
                let name = "store.sqlite" + suffix
                try? FileManager.default.removeItem(atPath: tool.directory.appendingPathComponent(name).path)
                let side = try await tool.runOnStore(["export", "users", "--output", name])
                #expect(side.status == 73, "\(name)")
                #expect(side.stderr.contains("is the store's own \(suffix) file"), "\(side.stderr)")
                #expect(!FileManager.default.fileExists(atPath: tool.directory.appendingPathComponent(name).path))
            }

            let fifo = tool.directory.appendingPathComponent("fifo").path
            #expect(mkfifo(fifo, 0o600) == 0)
            let link = tool.directory.appendingPathComponent("link").path
            let target = tool.directory.appendingPathComponent("target.json").path
            try Data("kept".utf8).write(to: URL(fileURLWithPath: target))
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
            for (path, kind) in [(fifo, "a FIFO"), (link, "a symbolic link")] {
                let result = try await tool.runOnStore(["export", "--output", path])
                #expect(result.status == 73)
                #expect(result.stderr.contains("is \(kind), not a regular file"), "\(result.stderr)")
                #expect(FileKind.nonRegular(at: path) == kind, "left as it was")
            }
            #expect(try String(contentsOfFile: target, encoding: .utf8) == "kept")
            #expect(try await tool.runOnStore(["export", "--output", ""]).status == 64)
            #expect(try await tool.runOnStore(["list", "users"]).status == 0)
        }
    }

    @Test func `the output's extension chooses NDJSON in any case`() throws {
        for path in ["a.ndjson", "b.JSONL", "c.NDJson", "dir.ndjson/x.jsonl"] {
            #expect(try ExportCommand.resolveFormat(nil, outputPath: path) == .ndjson, "\(path)")
        }
        for path in ["a.json", "b.ndjson.bak", "jsonl"] {
            #expect(try ExportCommand.resolveFormat(nil, outputPath: path) == .json, "\(path)")
        }
        #expect(try ExportCommand.resolveFormat("NDJSON", outputPath: "a.json") == .ndjson)
    }

    @Test func `an export to an unwritable place exits 74 and leaves no file`() async throws {
        try await withTool { tool in
            try await fill(tool)
            let path = tool.directory.appendingPathComponent("missing-dir/out.json").path
            let result = try await tool.runOnStore(["export", "--output", path])
            #expect(result.status == 74)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func `import merges by default and keeps other records`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", "1"])
            try await tool.runOnStore(["put", "users", "bob", "2"])
            try await tool.runOnStore(["put", "users", "carol", "3"])
            let file = try tool.file("in.json", #"{"collections": {"users": {"alice": 1, "bob": 20, "dave": 4}}}"#)
            let dryRun = try await tool.runOnStore(["import", file, "--dry-run"])
            #expect(dryRun.status == 0)
            #expect(dryRun.output == "dry run: would add 1, change 1 and remove 0 records (1 unchanged) in 1 collections; nothing was written\n")
            #expect(try await tool.runOnStore(["get", "users", "dave"]).status == 66)

            let result = try await tool.runOnStore(["import", file])
            #expect(result.output == "imported 1 collections: added 1, changed 1, removed 0, unchanged 1\n")
            #expect(try await tool.runOnStore(["list", "users", "--values"]).outputLines.map { $0.split(separator: "\t").last! }
                == ["1", "20", "3", "4"])
        }
    }

    @Test func `import with replace makes named collections exactly the file's records`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", "1"])
            try await tool.runOnStore(["put", "users", "bob", "2"])
            try await tool.runOnStore(["put", "other", "x", "9"])
            let file = try tool.file("in.ndjson", """
                {"collection":"users","key":"alice","value":1}
                {"collection":"users","key":"carol","value":3}

                """)
            let dryRun = try await tool.runOnStore(["import", file, "--replace", "--dry-run"])
            #expect(dryRun.output == "dry run: would add 1, change 0 and remove 1 records (1 unchanged) in 1 collections; nothing was written\n")
            #expect(try await tool.runOnStore(["get", "users", "bob"]).status == 0)

            let result = try await tool.runOnStore(["import", "--replace", "-"], input: Data(try String(contentsOfFile: file, encoding: .utf8).utf8))
            #expect(result.status == 0)
            #expect(result.output == "imported 1 collections: added 1, changed 0, removed 1, unchanged 1\n")
            #expect(try await tool.runOnStore(["list", "users"]).outputLines.map { $0.split(separator: "\t").first! } == ["alice", "carol"])
            #expect(try await tool.runOnStore(["get", "other", "x"]).output == "9\n")
        }
    }

    @Test func `a key given twice in one import ends with its later value, counted line by line by the import`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "x", "2"])
            try await tool.runOnStore(["put", "c", "q", "5"])
            try await tool.runOnStore(["put", "c", "w", "0"])
            try await tool.runOnStore(["put", "c", "z", "0"])
            // x: 1 then back to 2 (both lines change it); q: 1, 1 (no change), then back to 5.
            let file = try tool.file("dup.ndjson", """
                {"collection":"c","key":"x","value":1}
                {"collection":"c","key":"x","value":2}
                {"collection":"c","key":"q","value":1}
                {"collection":"c","key":"q","value":1}
                {"collection":"c","key":"q","value":5}

                """)
            // The dry run compares each line with the stored record (it keeps no keys).
            let dryRun = try await tool.runOnStore(["import", file, "--dry-run"])
            #expect(dryRun.output == "dry run: would add 0, change 3 and remove 0 records (2 unchanged) in 1 collections; nothing was written\n")
            let merged = try await tool.runOnStore(["import", file])
            #expect(merged.output == "imported 1 collections: added 0, changed 4, removed 0, unchanged 1\n")
            #expect(try await tool.runOnStore(["get", "c", "x"]).output == "2\n")
            #expect(try await tool.runOnStore(["get", "c", "q"]).output == "5\n")

            // Replacing: w and z are removed, x and q stay, whatever the counts say of repeats.
            let replaced = try await tool.runOnStore(["import", file, "--replace"])
            #expect(replaced.status == 0, "\(replaced.stderr)")
            #expect(try await tool.runOnStore(["list", "c"]).outputLines.map { $0.split(separator: "\t").first! } == ["q", "x"])
        }
    }

    @Test func `import skips a UTF-8 byte-order mark at the start, in both formats`() async throws {
        try await withTool { tool async throws in
            let bom = Data([0xEF, 0xBB, 0xBF])
            let json = bom + Data(#"{"collections": {"c": {"a": 1}}}"#.utf8)
            let ndjson = bom + Data((#"{"collection":"d","key":"b","value":2}"# + "\n").utf8)
            #expect(try await tool.runOnStore(["import", "-"], input: json).status == 0)
            #expect(try await tool.runOnStore(["import", "-"], input: ndjson).status == 0)
            #expect(try await tool.runOnStore(["get", "c", "a"]).output == "1\n")
            #expect(try await tool.runOnStore(["get", "d", "b"]).output == "2\n")
            // A lone 0xEF is no mark: refused as before.
            #expect(try await tool.runOnStore(["import", "-"], input: Data([0xEF]) + Data("{}".utf8)).status == 65)
        }
    }

    @Test func `import reads standard input`() async throws {
        try await withTool { tool async throws in
            let input = Data((#"{"collection":"c","key":"k","value":{"$base64":"AAE="}}"# + "\n").utf8)
            #expect(try await tool.runOnStore(["import", "-"], input: input).status == 0)
            #expect(try await tool.runOnStore(["get", "c", "k", "--raw"]).stdout == Data([0, 1]))
        }
    }

    @Test(arguments: [
        ("{\"collections\": {\"c\": {\"a\": 1, \"b\": }}}", 1, 37),
        ("{\"collection\":\"c\",\"key\":\"a\",\"value\":1}\n{\"collection\":\"c\",\"key\":\"b\",\"value\":[1,}\n", 2, 40),
        ("{\"collection\":\"c\",\"key\":\"a\",\"value\":1} {\"collection\":\"c\"}\n", 1, 40),
        ("{\"collection\":\"c\",\"key\":\"a\"}\n", 1, 1),
        ("{\"collection\":\"c\",\"colour\":1}\n", 1, 28),
        ("[1]", 1, 1),
        ("{\"collection\":\"c\",\"key\":\"a\",\"value\":{\"$base64\":\"====\"}}\n", 1, 37),
        ("{\"collection\":\"c\",\"key\":\"a\",\"value\":{\"$base64\":\"AA=A\"}}\n", 1, 37),
    ])
    func `malformed import input reports line and column and writes nothing`(input: String, line: Int, column: Int) async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "c", "kept", "1"])
            let before = try await tool.runOnStore(["export"]).output
            let file = try tool.file("bad.ndjson", input)
            for mode in [[], ["--replace"], ["--dry-run"]] {
                let result = try await tool.runOnStore(["import", file] + mode)
                #expect(result.status == 65)
                #expect(result.stderr.hasPrefix("recordkeeper: \(file): line \(line), column \(column): "), "\(result.stderr)")
                #expect(result.stderr.hasSuffix("; nothing was written\n"))
                #expect(try await tool.runOnStore(["export"]).output == before)
            }
        }
    }

    @Test func `a malformed import into a missing store creates no store`() async throws {
        try await withTool { tool in
            let file = try tool.file("bad.json", "{\"collections\": {\"c\": {\"k\": 1,}}}")
            #expect(try await tool.runOnStore(["import", file]).status == 65)
            #expect(try await tool.runOnStore(["import", file, "--replace"]).status == 65)
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }

    @Test func `importing a missing file exits 66`() async throws {
        try await withTool { tool async throws in
            #expect(try await tool.runOnStore(["import", "nope.json"]).status == 66)
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }

    @Test(arguments: ["", "\n\n", "{\"collections\": {}}"])
    func `an input that names no collection imports nothing, says so and creates no store`(input: String) async throws {
        try await withTool { tool in
            let file = try tool.file("empty", input)
            for replace in [[], ["--replace"]] {
                let result = try await tool.runOnStore(["import", file] + replace)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.output == "the input holds no collections and no records; nothing was imported\n")
            }
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
        }
    }

    @Test func `an empty input never removes records, with or without replace`() async throws {
        try await withTool { tool in
            #expect(try await tool.runOnStore(["put", "notes", "a", "1"]).status == 0)
            let file = try tool.file("empty.ndjson", "")
            for replace in [[], ["--replace"]] {
                let result = try await tool.runOnStore(["import", file] + replace)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.output == "the input holds no collections and no records; nothing was imported\n")
            }
            #expect(try await tool.runOnStore(["get", "notes", "a"]).output == "1\n")
        }
    }

    @Test func `progress stays off when stderr is not a terminal`() async throws {
        try await withTool { tool in
            let lines = (0..<3000).map { #"{"collection":"c","key":"k\#($0)","value":\#($0)}"# }
            let file = try tool.file("many.ndjson", lines.joined(separator: "\n") + "\n")
            let imported = try await tool.runOnStore(["import", file])
            #expect(imported.stderr.isEmpty)
            let exported = try await tool.runOnStore(["export", "--format", "ndjson"])
            #expect(exported.stderr.isEmpty)
            #expect(exported.outputLines.count == 3001)
        }
    }
}
