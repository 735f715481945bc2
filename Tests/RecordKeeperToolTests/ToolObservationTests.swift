import Foundation
import RecordKeeper
import Testing

/// An app's change stream hears what the `recordkeeper` tool writes to its store.
@Suite struct ToolObservationTests {
    @Test func `a stream yields the tool's put and delete`() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("RecordKeeperToolObservation-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer {
            do { try FileManager.default.removeItem(at: directory) } catch {
                Issue.record("could not remove \(directory.path): \(error)")
            }
        }
        let tool = ToolRunner(directory: directory)
        let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
        try await store.put("users", key: "seed", data: Data("{}".utf8))
        let stream = await store.changes(in: "users")

        #expect(try tool.runOnStore(["put", "users", "alice", #"{"name":"Alice"}"#]).status == 0)
        let put = try await merged(stream) { !$0.isEmpty }
        #expect(put == RecordChanges(upserts: ["alice": Data(#"{"name":"Alice"}"#.utf8)]))

        #expect(try tool.runOnStore(["delete", "users", "seed"]).status == 0)
        let deleted = try await merged(stream) { !$0.isEmpty }
        #expect(deleted == RecordChanges(upserts: [:], removals: ["seed"]))
    }
}

/// Reads `stream` until the merged elements satisfy `done`; fails after 30 s (a hang guard,
/// not a timing: the handshake is the element itself).
private func merged(
    _ stream: AsyncStream<RecordChanges>, until done: @escaping @Sendable (RecordChanges) -> Bool
) async throws -> RecordChanges {
    try await withThrowingTaskGroup(of: RecordChanges?.self) { group in
        group.addTask {
            var merged = RecordChanges()
            var iterator = stream.makeAsyncIterator()
            while !done(merged), let next = await iterator.next() { merged.merge(next) }
            return merged
        }
        group.addTask {
            try await Task.sleep(for: .seconds(30))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let merged = first else {
            Issue.record("the changes did not arrive within 30 s")
            throw CancellationError()
        }
        return merged
    }
}
