import TestHelpers
import Dispatch
import Foundation
import Testing
@testable import RecordKeeper

/// Waits for `semaphore` on a thread of its own, never on a cooperative one.
func wait(for semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { continuation in
        // A thread of its own: on Linux Dispatch's global queues are the threads Swift's tasks
        // run on, which the rest of the suite (and a sanitized run) may all be using.
        Thread.detachNewThread {
            semaphore.wait()
            continuation.resume()
        }
    }
}

@Suite struct ReadersBesideWriterTests {
    // A put that waited for the lock on the main thread would block it for the whole busy
    // timeout (10 minutes here): the time limit turns that into a failure, not a slow pass.
    @Test(.timeLimit(.minutes(5)))
    func `the main actor keeps running while a put waits for another connection's write lock`() async throws {
        try await withTemporaryDirectory { directory in
            try await Self.heartbeatWhilePutWaits(directory.appendingPathComponent("records.sqlite"))
        }
    }

    @MainActor
    private static func heartbeatWhilePutWaits(_ url: URL) async throws {
        let log = EventLog()
        // `normal`: small puts are allowed to try inline, on the caller's (main) executor.
        let store = RecordStore(
            url: url, options: .init(durability: .normal, busyTimeout: .seconds(600), eventHandler: { log.append($0) }))
        try await store.put("c", key: "a", data: Data("1"))
        let lock = try ForeignWriteLock(url)

        let finished = Counter()
        let put = Task { @MainActor in
            defer { _ = finished.increment() }
            try await store.put("c", key: "b", data: Data("2"))
        }
        // The heartbeat: this function, on the main actor, ticks 200 times while the put waits.
        // A put waiting in SQLite's busy handler on the main thread would stop it until the put
        // failed (busy) or the lock was released; either way the put would be finished.
        var ticks = 0
        while ticks < 200 {
            await Task.yield()
            ticks += 1
        }
        #expect(finished.count == 0, "the put must still be waiting for the lock")
        lock.release()
        try await put.value
        #expect(try await store.value("c", key: "b") == Data("2"))
        // The refused inline attempt is not reported as a failed request.
        let failed = log.all.filter {
            if case .request(_, _, _, succeeded: false) = $0 { return true }
            return false
        }
        #expect(failed.isEmpty)
    }

    @Test func `an inline put meeting another connection's lock runs on the store's executor and succeeds`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(durability: .normal, busyTimeout: .seconds(120)))
            try await store.put("c", key: "a", data: Data("1"))
            let lock = try ForeignWriteLock(url)
            let put = Task { try await store.put("c", key: "a", data: Data("2")) }
            // Reads answer meanwhile, with the committed state.
            #expect(try await store.value("c", key: "a") == Data("1"))
            lock.release()
            try await put.value
            #expect(try await store.value("c", key: "a") == Data("2"))
        }
    }

    @Test func `reads answer with the committed state while a write transaction is open`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.replace("c", values: ["a": Data("1"), "b": Data("2")])
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let writer = Task {
                try await store.write { transaction in
                    try transaction.put("c", key: "a", data: Data("changed"))
                    try transaction.put("c", key: "z", data: Data("new"))
                    try transaction.put("other", key: "k", data: Data("v"))
                    entered.signal()
                    release.wait()  // the gate: the transaction stays open until the test opens it
                }
            }
            await wait(for: entered)

            #expect(try await store.value("c", key: "a") == Data("1"))
            #expect(try await store.record("c", key: "z") == nil)
            #expect(try await store.read("c") == ["a": Data("1"), "b": Data("2")])
            #expect(try await store.records("c")?.map(\.key) == ["a", "b"])
            #expect(try await store.collections().map(\.name) == ["c"])
            #expect(try await store.snapshot { try $0.read("other") } == nil)

            release.signal()
            try await writer.value
            #expect(try await store.read("c") == ["a": Data("changed"), "b": Data("2"), "z": Data("new")])
            #expect(try await store.collections().map(\.name) == ["c", "other"])
        }
    }

    @Test func `another store's open write transaction does not hold up reads`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "a", data: Data("1"))
            let other = RecordStore(url: url)
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let writer = Task {
                try await other.write { transaction in
                    try transaction.put("c", key: "a", data: Data("2"))
                    entered.signal()
                    release.wait()
                }
            }
            await wait(for: entered)
            #expect(try await store.value("c", key: "a") == Data("1"))
            #expect(try await store.read("c") == ["a": Data("1")])
            release.signal()
            try await writer.value
            #expect(try await store.value("c", key: "a") == Data("2"))
        }
    }

    @Test func `in memory, a read after a write transaction sees its commit`() async throws {
        // The in-memory store has one connection: reads wait for a running write transaction
        // (documented in Concurrency.md) and then see its commit.
        let store = RecordStore.inMemory()
        try await store.put("c", key: "a", data: Data("1"))
        try await store.write { try $0.put("c", key: "a", data: Data("2")) }
        #expect(try await store.value("c", key: "a") == Data("2"))
        #expect(try await store.read("c") == ["a": Data("2")])
    }
}
