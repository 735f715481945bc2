import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Other processes' commits reach a stream through each signal (the platform's event source,
/// the adaptive poll alone), and a store whose observation was suspended misses nothing a child
/// process wrote meanwhile.
@Suite struct ChangeSignalProcessTests {
    @Test(arguments: [ChangeSignalChoice.platform, .adaptivePoll])
    func `a stream hears a child process's commits`(signal: ChangeSignalChoice) async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            var options = RecordStore.Options()
            options.changeSignal = signal
            let store = RecordStore(url: url, options: options)
            try await store.put("shared", key: "first", data: Data("0"))
            let stream = await store.changes(in: "shared")
            let count = 30
            let hearing = Task { try await changes(of: stream, timeout: .seconds(120)) { $0.upserts.count >= count } }
            // The signal is made when a consumer waits: the child writes after it does.
            try await waitUntil("the consumer waits") { store.watcher.waitingCount("shared") == 1 }
            let writer = try Self.writer(count: count, store: url, in: directory)
            try writer.start()
            let heard = try await hearing.value
            await writer.waitForExit()
            let errors = try writer.errorOutput()
            #expect(writer.process.terminationStatus == 0, "\(errors)")
            #expect(Set(heard.upserts.keys) == Set((0..<count).map { "child-\($0)" }))
            #if os(Linux)
                // inotify on Linux; the poll alone when asked for.
                #expect(store.watcher.stateForTesting().events == (signal == .platform))
            #endif
        }
    }

    @Test func `a store whose observation is suspended holds no lock and misses nothing a child process writes`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let store = RecordStore(url: url)
            try await store.put("shared", key: "first", data: Data("0"))
            let stream = await store.changes(in: "shared")
            store.suspendObservation()
            // The child can take the observers' lock exclusively: it sees nobody observing and
            // logs nothing.
            let count = 20
            let writer = try Self.writer(count: count, store: url, in: directory)
            try writer.start()
            await writer.waitForExit()
            let errors = try writer.errorOutput()
            #expect(writer.process.terminationStatus == 0, "\(errors)")
            #expect(try await Self.loggedRows(url) == 0, "the child logged although nobody observed")
            store.resumeObservation()
            let first = try await firstElement(of: stream, timeout: .seconds(60))
            #expect(first.isFullState)
            #expect(Set(first.upserts.keys) == Set(["first"] + (0..<count).map { "child-\($0)" }))
        }
    }

    private static func writer(count: Int, store url: URL, in directory: URL) throws -> ChildProcess {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        return try ChildProcess(
            executable: helper, arguments: ["writer", "--store", url.path, "--prefix", "child", "--count", "\(count)"],
            in: directory)
    }

    /// The rows in the store's change log.
    private static func loggedRows(_ url: URL) async throws -> Int {
        let reader = RecordStore(url: url)
        return try await reader.perform(.read, collection: nil) { engine in
            let bounds = try engine.changeLog.bounds()
            return bounds.first.map { Int(bounds.last - $0 + 1) } ?? 0
        }
    }
}
