import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// A change stream in this process hears commits made by other processes on the same file.
@Suite struct ObservationTests {
    @Test func `a stream yields what a child process writes and removes`() async throws {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let store = RecordStore(url: url)
            let stream = await store.changes(in: "shared")
            let count = 60
            let written = try await Self.runWriter(count: count, store: url, in: directory, observing: stream)
            #expect(written.removals.isEmpty)
            #expect(Set(written.upserts.keys) == Set((0..<count).map { "child-\($0)" }))
            for (key, payload) in written.upserts {
                #expect(payload.starts(with: Data("\(key) written by process".utf8)), "\(key)")
            }

            let remover = try ChildProcess(
                executable: helper, arguments: ["remover", "--store", url.path, "--prefix", "child", "--count", "\(count)"],
                in: directory)
            try remover.start()
            let removed = try await changes(of: stream, timeout: .seconds(120)) { $0.removals.count >= count / 2 }
            await remover.waitForExit()
            let removerErrors = try remover.errorOutput()
            #expect(remover.process.terminationStatus == 0, "\(removerErrors)")
            #expect(removed == RecordChanges(upserts: [:], removals: Set(stride(from: 0, to: count, by: 2).map { "child-\($0)" })))
        }
    }

    @Test func `a stream taken before the store exists hears a child process create it`() async throws {
        try await withTemporaryDirectory { directory in
            // Neither the store nor its directory exists when the stream is taken.
            let url = directory.appendingPathComponent("Application Support/shared.sqlite")
            let stream = await RecordStore(url: url).changes(in: "shared")
            let written = try await Self.runWriter(count: 10, store: url, in: directory, observing: stream)
            #expect(Set(written.upserts.keys) == Set((0..<10).map { "child-\($0)" }))
            #expect(written.removals.isEmpty)
        }
    }

    /// Runs the helper's `writer` of `count` records on `store`, and returns what `stream` heard
    /// meanwhile (until it heard every record).
    private static func runWriter(
        count: Int, store url: URL, in directory: URL, observing stream: AsyncStream<RecordChanges>
    ) async throws -> RecordChanges {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        let writer = try ChildProcess(
            executable: helper, arguments: ["writer", "--store", url.path, "--prefix", "child", "--count", "\(count)"],
            in: directory)
        try writer.start()
        let written = try await changes(of: stream, timeout: .seconds(120)) { $0.upserts.count >= count }
        await writer.waitForExit()
        let writerErrors = try writer.errorOutput()
        #expect(writer.process.terminationStatus == 0, "\(writerErrors)")
        return written
    }
}
