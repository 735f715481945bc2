import TestHelpers
import Dispatch
import Foundation
import Testing
@testable import RecordKeeper

/// The signals that wake change streams for other processes' commits: the platform's event
/// source and the adaptive poll (cross-process behaviour: `ChangeSignalProcessTests`).
@Suite struct ChangeSignalTests {
    @Test func `the fallback poll backs off from 5 ms to 1 s while nothing changes and starts again after a change`() {
        var schedule = AdaptivePoll.Schedule.fallback
        var intervals: [Int] = []
        for _ in 0..<10 {
            intervals.append(schedule.current)
            schedule.lengthen()
        }
        #expect(intervals == [5, 10, 20, 40, 80, 160, 320, 640, 1_000, 1_000])
        schedule.restart()
        #expect(schedule.current == 5)
        #expect(AdaptivePoll.Schedule.backstop.minimum == 2)
        #expect(AdaptivePoll.Schedule.backstop.maximum == 8_000)
    }

    @Test func `a poll whose consumer waits checks, and stops when nobody waits`() async throws {
        let queue = DispatchQueue(label: "test")
        let (wakes, woken) = AsyncStream.makeStream(of: Void.self)
        let poll = AdaptivePoll(schedule: .fallback, queue: queue) { woken.yield() }
        queue.sync { poll.consumersWaiting(true) }
        _ = try await firstElement(of: wakes, timeout: .seconds(30))
        queue.sync {
            poll.consumersWaiting(false)
            poll.cancel()
        }
    }

    #if os(Linux)
        @Test func `inotify wakes for a write to the store's log by another descriptor`() async throws {
            try await withTemporaryDirectory { directory in
                let path = directory.appendingPathComponent("records.sqlite").path
                let queue = DispatchQueue(label: "test")
                let (wakes, woken) = AsyncStream.makeStream(of: Void.self)
                let signal = try #require(InotifyChangeSignal(storePath: path, queue: queue) { woken.yield() })
                // As a writer in another process would: a write(2) to the -wal file.
                try Data("frame".utf8).write(to: URL(fileURLWithPath: path + "-wal"))
                _ = try await firstElement(of: wakes, timeout: .seconds(30))
                queue.sync { signal.cancel() }
            }
        }

        @Test func `more stores than the kernel allows inotify instances per user all get events`() async throws {
            // fs.inotify.max_user_instances is 128 by default, for all of a user's processes:
            // a signal per instance would leave most of these stores polling.
            try await withTemporaryDirectory { directory in
                let queue = DispatchQueue(label: "test")
                var signals: [InotifyChangeSignal] = []
                for index in 0..<300 {
                    let folder = directory.appendingPathComponent("s\(index)")
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
                    let path = folder.appendingPathComponent("records.sqlite").path
                    signals.append(try #require(InotifyChangeSignal(storePath: path, queue: queue) {}, "store \(index)"))
                }
                // The last one still hears a write.
                let (wakes, woken) = AsyncStream.makeStream(of: Void.self)
                let path = directory.appendingPathComponent("s299/last.sqlite").path
                let last = try #require(InotifyChangeSignal(storePath: path, queue: queue) { woken.yield() })
                try Data("frame".utf8).write(to: URL(fileURLWithPath: path + "-wal"))
                _ = try await firstElement(of: wakes, timeout: .seconds(30))
                queue.sync {
                    for signal in signals { signal.cancel() }
                    last.cancel()
                }
            }
        }

        @Test func `two stores in one directory share its watch and one cancelling leaves the other hearing`() async throws {
            try await withTemporaryDirectory { directory in
                let queue = DispatchQueue(label: "test")
                let (wakes, woken) = AsyncStream.makeStream(of: String.self)
                let first = try #require(InotifyChangeSignal(storePath: directory.appendingPathComponent("a.sqlite").path, queue: queue) { woken.yield("a") })
                let second = try #require(InotifyChangeSignal(storePath: directory.appendingPathComponent("b.sqlite").path, queue: queue) { woken.yield("b") })
                queue.sync { first.cancel() }
                #expect(!first.isWatchingForTesting)
                #expect(second.isWatchingForTesting)
                // A write to the cancelled store's log wakes nobody; one to the other's wakes it.
                try Data("frame".utf8).write(to: directory.appendingPathComponent("a.sqlite-wal"))
                try Data("frame".utf8).write(to: directory.appendingPathComponent("b.sqlite-wal"))
                #expect(try await firstElement(of: wakes, timeout: .seconds(30)) == "b")
                queue.sync { second.cancel() }
                #expect(!second.isWatchingForTesting)
            }
        }

        @Test func `a store's signal on Linux is inotify with the poll behind it`() async throws {
            try await withTemporaryDirectory { directory in
                let url = directory.appendingPathComponent("records.sqlite")
                let store = RecordStore(url: url)
                let writer = RecordStore(url: url)
                try await writer.put("c", key: "a", data: Data("0"))
                let stream = await store.changes(in: "c")
                let heard = Task { try await changes(of: stream, timeout: .seconds(30), until: { !$0.isEmpty }) }
                // The signal is made when a consumer waits: the write comes after it does.
                try await waitUntil("the consumer waits") { store.watcher.waitingCount("c") == 1 }
                try await writer.put("c", key: "b", data: Data("1"))
                #expect(try await heard.value.upserts["b"] == Data("1"))
                // The signal was made when the consumer waited, for the store that exists.
                let state = store.watcher.stateForTesting()
                #expect(state.signal && state.events)
            }
        }
    #endif

    @Test func `a store told to poll uses the adaptive poll alone and still hears another store`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            var options = RecordStore.Options()
            options.changeSignal = .adaptivePoll
            let store = RecordStore(url: url, options: options)
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "a", data: Data("0"))
            let stream = await store.changes(in: "c")
            let heard = Task { try await changes(of: stream, timeout: .seconds(30), until: { !$0.isEmpty }) }
            try await waitUntil("the consumer waits") { store.watcher.waitingCount("c") == 1 }
            try await writer.put("c", key: "b", data: Data("1"))
            #expect(try await heard.value.upserts["b"] == Data("1"))
            let state = store.watcher.stateForTesting()
            #expect(state.signal && !state.events)
        }
    }
}
