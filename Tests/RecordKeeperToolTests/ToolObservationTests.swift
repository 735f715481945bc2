import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// An app's change stream hears what the `recordkeeper` tool writes to its store.
@Suite struct ToolObservationTests {
    @Test func `a stream yields the tool's put and delete`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = ToolRunner(directory: directory)
            let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            try await store.put("users", key: "seed", data: Data("{}".utf8))
            let stream = await store.changes(in: "users")

            #expect(try await tool.runOnStore(["put", "users", "alice", #"{"name":"Alice"}"#]).status == 0)
            let put = try await changes(of: stream, timeout: .seconds(120)) { !$0.isEmpty }
            #expect(put == RecordChanges(upserts: ["alice": Data(#"{"name":"Alice"}"#.utf8)]))

            #expect(try await tool.runOnStore(["delete", "users", "seed"]).status == 0)
            let deleted = try await changes(of: stream, timeout: .seconds(120)) { !$0.isEmpty }
            #expect(deleted == RecordChanges(upserts: [:], removals: ["seed"]))
            await store.close()
        }
    }
}
