import Foundation
import Testing

/// `check` and `info`.
@Suite struct CheckAndInfoTests {
    @Test func `check reports integrity, format version and sizes`() throws {
        try withTool { tool throws in
            try tool.runOnStore(["put", "users", "alice", "12345"])
            let result = try tool.runOnStore(["check"])
            #expect(result.status == 0)
            let lines = result.outputLines
            #expect(lines.contains("integrity: ok"))
            #expect(lines.contains("format version: 1"))
            #expect(lines.contains("collections: 1"))
            #expect(lines.contains("records: 1"))
            #expect(lines.contains("payload bytes: 5"))
        }
    }

    @Test func `info prints the path and SQLite settings`() throws {
        try withTool { tool throws in
            try tool.runOnStore(["put", "users", "alice", "1"])
            let result = try tool.runOnStore(["info"])
            #expect(result.status == 0)
            #expect(result.output.contains("journal mode: wal"))
            #expect(result.output.contains("durability: full"))
            #expect(result.outputLines.first?.hasPrefix("path: ") == true)
            #expect(result.outputLines.first?.hasSuffix("store.sqlite") == true)
        }
    }
}
