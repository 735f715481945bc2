import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// The outbox is not a collection: the tool's record commands do not show it, and an import
/// that replaces every collection leaves the queued operations alone.
@Suite struct OutboxToolTests {
    @Test func `collections, list and export do not show the outbox and an import keeps it`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = ToolRunner(directory: directory)
            let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            try await store.apply(
                "carts", changes: RecordChanges(upserts: ["ana": Data("1".utf8)]),
                enqueue: [OutboxMessage(kind: "cart.add-item", payload: Data("{}".utf8))])
            await store.close()

            let collections = try await tool.runOnStore(["collections"])
            #expect(collections.status == 0)
            #expect(collections.output.contains("carts"))
            #expect(!collections.output.contains("outbox"))
            #expect(try await tool.runOnStore(["list", "outbox"]).output.contains("cart.add-item") == false)
            let exported = try await tool.runOnStore(["export"])
            #expect(exported.status == 0)
            #expect(!exported.output.contains("outbox") && !exported.output.contains("cart.add-item"))

            let file = try tool.file("replace.json", #"{"collections":{"carts":{"bob":2}}}"#)
            #expect(try await tool.runOnStore(["import", file, "--replace"]).status == 0)
            let reopened = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            #expect(try await reopened.read("carts") == ["bob": Data("2".utf8)])
            #expect(try await reopened.outbox.pending().map(\.kind) == ["cart.add-item"])
            await reopened.close()
        }
    }
}
