import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// `check` and `info`.
@Suite struct CheckAndInfoTests {
    @Test func `check reports integrity, format version and sizes`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", "12345"])
            let result = try await tool.runOnStore(["check"])
            #expect(result.status == 0)
            let lines = result.outputLines
            #expect(lines.contains("integrity: ok"))
            #expect(lines.contains("format version: 9"))
            #expect(lines.contains("collections: 1"))
            #expect(lines.contains("records: 1"))
            #expect(lines.contains("payload bytes: 5"))
        }
    }

    @Test func `check reports the item version stored for each repository collection`() async throws {
        struct Book: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var rating: Int
        }
        try await withTemporaryDirectory { (directory: URL) async throws in
            let tool = ToolRunner(directory: directory)
            let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            try await RecordRepository<Book>(store: store, collection: "books", itemVersion: 3, migrations: [])
                .save(Book(id: "dune", rating: 5))
            try await RecordRepository<Book>(store: store, collection: "shelf").save(Book(id: "a", rating: 1))
            try await store.put("plain", key: "k", data: Data("1".utf8))
            await store.close()

            let result = try await tool.runOnStore(["check"])
            #expect(result.status == 0)
            let versions = result.outputLines.filter { $0.hasPrefix("item version: ") }
            #expect(versions == ["item version: books 3", "item version: shelf 1"])
        }
    }

    @Test func `info prints the path and SQLite settings`() async throws {
        try await withTool { tool in
            try await tool.runOnStore(["put", "users", "alice", "1"])
            let result = try await tool.runOnStore(["info"])
            #expect(result.status == 0)
            #expect(result.output.contains("journal mode: wal"))
            #expect(result.output.contains("durability: full"))
            #expect(result.outputLines.first?.hasPrefix("path: ") == true)
            #expect(result.outputLines.first?.hasSuffix("store.sqlite") == true)
        }
    }

    @Test func `check reports a damaged store with exit 65 and leaves it unchanged`() async throws {
        try await withTool { tool in
            let lines = (0..<300).map { #"{"collection":"c","key":"k\#($0)","value":"\#(String(repeating: "x", count: 300))"}"# }
            let file = try tool.file("c.ndjson", lines.joined(separator: "\n"))
            try #require(try await tool.runOnStore(["import", file]).status == 0)
            // Break the b-tree page type of every page after the schema page.
            let url = URL(fileURLWithPath: tool.storePath)
            var bytes = try Data(contentsOf: url)
            for page in stride(from: 2 * 4096, to: bytes.count, by: 4096) { bytes[page] = 0x7F }
            try bytes.write(to: url)

            let check = try await tool.runOnStore(["check"])
            #expect(check.status == 65)
            #expect(check.output.hasPrefix("integrity: "))
            #expect(check.stderr.contains("keep a copy of the file"))
            // What to do next, since later writes are not refused.
            #expect(check.stderr.contains("stop writing to it"), "\(check.stderr)")
            #expect(check.stderr.contains("restore a backup or export what still reads into a new store"))
            #expect(check.stderr.contains(#"docs/BACKUP.md, "A damaged store""#))
            let read = try await tool.runOnStore(["list", "c"])
            #expect(read.status == 69)
            #expect(try Data(contentsOf: url) == bytes)
        }
    }
    @Test func `a collection that still reads exports from a store damaged elsewhere`() async throws {
        try await withTool { tool in
            try #require(try await tool.runOnStore(["put", "a", "k1", "1"]).status == 0)
            try #require(try await tool.runOnStore(["put", "a", "k2", "2"]).status == 0)
            let lines = (0..<300).map { #"{"collection":"c","key":"k\#($0)","value":"\#(String(repeating: "x", count: 300))"}"# }
            try #require(try await tool.runOnStore(["import", try tool.file("c.ndjson", lines.joined(separator: "\n"))]).status == 0)
            // Break the last page: one of c's leaves, written after a's records.
            let url = URL(fileURLWithPath: tool.storePath)
            var bytes = try Data(contentsOf: url)
            bytes[bytes.count - 4096] = 0x7F
            try bytes.write(to: url)

            #expect(try await tool.runOnStore(["export", "c"]).status != 0)
            let healthy = try await tool.runOnStore(["export", "a", "--format", "ndjson"])
            #expect(healthy.status == 0, "\(healthy.stderr)")
            #expect(healthy.output.contains(#""key":"k1""#) && healthy.output.contains(#""key":"k2""#), "\(healthy.output)")
            #expect(try await tool.runOnStore(["export", "missing"]).status == 66)
        }
    }
}
