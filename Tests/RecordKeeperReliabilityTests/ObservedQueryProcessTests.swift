import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// An observed query follows the commits of another process.
@Suite struct ObservedQueryProcessTests {
    @Test func `an observed query updates when a child process writes`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let store = RecordStore(url: url)
            try await store.put("shared", key: "first", data: Data("0".utf8))
            let count = 10
            // The child's payloads are plain text, not JSON: the query reads no field, it
            // pages the collection in key order.
            let query = RecordQuery(limit: 100)
            let pages = await store.observe("shared", query)
            let heard = Task {
                var iterator = pages.makeAsyncIterator()
                var keys: [String] = []
                while keys.count < count + 1, let page = try await iterator.next() { keys = page.elements.map(\.key) }
                return keys
            }
            try await waitUntil("the observer waits") { store.watcher.waitingCount("shared") == 1 }
            let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
            let writer = try ChildProcess(
                executable: helper,
                arguments: ["writer", "--store", url.path, "--prefix", "child", "--count", "\(count)"], in: directory)
            try writer.start()
            let keys = try await withTimeLimit("the observed query seeing the child's records", timeout: .seconds(120)) {
                try await heard.value
            }
            await writer.waitForExit()
            let errors = try writer.errorOutput()
            #expect(writer.process.terminationStatus == 0, "\(errors)")
            #expect(Set(keys) == Set(["first"] + (0..<count).map { "child-\($0)" }))
        }
    }
}
