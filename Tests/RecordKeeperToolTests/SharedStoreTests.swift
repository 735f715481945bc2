import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// An app's open store and the `recordkeeper` tool share one file: each sees the other's
/// commits at once, whatever the app did before.
@Suite struct SharedStoreTests {
    @Test func `commits after the app's first read reach the tool while the app keeps the store open`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = ToolRunner(directory: directory)
            let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            try await store.put("users", key: "seed", data: Data("1".utf8))
            // Opening the reader looks at the file's header: that look must not drop the locks
            // the store's connections hold, or the tool's exit deletes the log the store uses.
            #expect(try await store.read("users")?.keys.sorted() == ["seed"])
            #expect(try await tool.runOnStore(["put", "users", "alice", "2"]).status == 0)
            try await store.put("users", key: "bob", data: Data("3".utf8))
            let listed = try await tool.runOnStore(["list", "users"])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.outputLines.map { $0.split(separator: "\t").first.map(String.init) } == ["alice", "bob", "seed"])
            // And the store still sees the tool's commits.
            #expect(try await tool.runOnStore(["delete", "users", "alice"]).status == 0)
            #expect(try await store.read("users")?.keys.sorted() == ["bob", "seed"])
            await store.close()
        }
    }
}
