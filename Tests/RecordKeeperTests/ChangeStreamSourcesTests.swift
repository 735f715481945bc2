import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Change streams hear every writer of the file, merge what a slow consumer missed, and end
/// when released or cancelled.
@Suite struct ChangeStreamSourcesTests {
    @Test func `a second store on the same file is observed, removals as removals`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let observer = RecordStore(url: url)
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "old", data: Data("0"))
            let stream = await observer.changes(in: "c")
            try await writer.apply("c", changes: RecordChanges(upserts: ["a": Data("1"), "b": Data("2")], removals: ["old"]))
            let first = try await changes(of: stream, until: { $0.count >= 3 })
            #expect(first == RecordChanges(upserts: ["a": Data("1"), "b": Data("2")], removals: ["old"]))
            try await writer.removeCollection("c")
            let second = try await changes(of: stream, until: { $0.count >= 2 })
            #expect(second == RecordChanges(upserts: [:], removals: ["a", "b"]))
        }
    }

    @Test func `a stream hears another store's commits made before its consumer first reads`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let observer = RecordStore(url: url)
            // Registered before anything opened the store: positioned when this returns.
            let stream = await observer.changes(in: "c")
            try await RecordStore(url: url).put("c", key: "a", data: Data("1"))
            #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["a": Data("1")]))
        }
    }

    @Test func `a stream that cannot read the store reports it to the event handler`() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("not-a-directory")
            try Data("x".utf8).write(to: file)
            let events = EventLog()
            let store = RecordStore(
                url: file.appendingPathComponent("records.sqlite"), options: .init(eventHandler: events.append))
            _ = await store.changes(in: "c")
            let failures = events.all.compactMap { event -> RecordStoreError? in
                if case .changeObservationFailed(let error) = event { return error }
                return nil
            }
            // The store's path cannot be looked at: said once (nothing is created for a stream,
            // so the observers' lock file is not tried before there is a store).
            #expect(failures.map(\.code) == [.cannotOpen])
            #expect(failures.first?.path?.hasSuffix("records.sqlite") == true)
            #expect(failures.first?.detail?.contains("is a file, not a directory") == true)
        }
    }

    @Test func `a change whose read failed after a wake-up is delivered at the next check, with no other commit`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let events = EventLog()
            let observer = RecordStore(url: url, options: .init(eventHandler: events.append))
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "first", data: Data("0"))
            let stream = await observer.changes(in: "c")
            let consumer = Task { () -> RecordChanges? in
                var iterator = stream.makeAsyncIterator()
                return await iterator.next()
            }
            // Parked, its read set to fail: the other store's commit wakes it, and the read fails.
            try await waitUntil("the consumer waits") { observer.watcher.waitingForTesting() }
            observer.watcher.failServesForTesting(3)
            try await writer.put("c", key: "a", data: Data("1"))
            func reported() -> Int {
                events.all.count { if case .changeObservationFailed = $0 { true } else { false } }
            }
            try await waitUntil("the failure is reported") { reported() == 1 }
            // The file's data version was taken as seen; the next checks (the backstop poll's)
            // must read again all the same, and a run of failures is reported once.
            observer.watcher.checkForTesting()
            observer.watcher.checkForTesting()
            #expect(reported() == 1, "one report for the run of failed reads")
            observer.watcher.checkForTesting()
            let delivered = try await withTimeLimit("the change after the failed read", timeout: .seconds(30)) {
                await consumer.value
            }
            #expect(delivered == RecordChanges(upserts: ["a": Data("1")]))
        }
    }

    @Test func `a stream follows a store deleted and made again at its path, with a full state, then every change`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let observer = RecordStore(url: url)
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "old", data: Data("0"))
            let stream = await observer.changes(in: "c")
            let seen = Protected<[RecordChanges]>([])
            let consumer = Task {
                for await change in stream { seen.withLock { $0.append(change) } }
            }
            defer { consumer.cancel() }
            try await writer.put("c", key: "a", data: Data("1"))
            try await waitUntil("the first change") { seen.withLock { $0.count } == 1 }
            await writer.close()
            // An app's reset: the files go, and a new store is made at the same path.
            for suffix in ["", "-wal", "-shm", "-observers"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.removeItem(atPath: url.path + suffix)
            }
            let fresh = RecordStore(url: url)
            try await fresh.put("c", key: "new", data: Data("2"))
            try await waitUntil("the new file's state", timeout: .seconds(30)) {
                seen.withLock { $0.contains { $0.upserts["new"] == Data("2") } }
            }
            let full = try #require(seen.withLock { $0.last })
            #expect(full.upserts == ["new": Data("2")], "the new file's records")
            // The observers' lock is the new file's: the next commit is logged and delivered.
            try await fresh.put("c", key: "next", data: Data("3"))
            try await waitUntil("the next change", timeout: .seconds(30)) {
                seen.withLock { $0.contains { $0.upserts["next"] == Data("3") } }
            }
        }
    }

    @Test func `a stream taken after the observers' lock failed for an earlier one tries the lock again`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "a", data: Data("1"))
            await writer.close()
            // The lock file cannot be opened for now (a directory in its place, as a full
            // descriptor table or a passing permission problem would fail it).
            let lockPath = url.path + "-observers"
            if FileManager.default.fileExists(atPath: lockPath) { try FileManager.default.removeItem(atPath: lockPath) }
            try FileManager.default.createDirectory(atPath: lockPath, withIntermediateDirectories: false)
            let events = EventLog()
            let observer = RecordStore(url: url, options: .init(eventHandler: events.append))
            do {
                let stream = await observer.changes(in: "c")
                #expect(observer.watcher.stateForTesting().observerLock == false)
                _ = stream
            }
            #expect(events.all.contains { if case .changeObservationFailed = $0 { true } else { false } })
            try FileManager.default.removeItem(atPath: lockPath)
            // The first stream is gone; the next one takes the lock.
            let stream = await observer.changes(in: "c")
            #expect(observer.watcher.stateForTesting().observerLock == true)
            _ = stream
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a stream only delivers changes committed after it was created`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "before", data: Data("0"))
            var iterator = await store.changes(in: "c").makeAsyncIterator()
            try await store.put("c", key: "after", data: Data("1"))
            #expect(await iterator.next() == RecordChanges(upserts: ["after": Data("1")]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a large commit arrives in parts that together name every key once`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let count = ChangeWatcher.batchLimit * 2 + 10
            var iterator = await store.changes(in: "c").makeAsyncIterator()
            var values: [String: Data] = [:]
            for number in 0..<count { values["k\(number)"] = Data("\(number)") }
            try await store.replace("c", values: values)
            var merged = RecordChanges()
            var parts = 0
            while merged.count < count, let part = await iterator.next() {
                #expect(part.count <= ChangeWatcher.batchLimit)
                merged.merge(part)
                parts += 1
            }
            #expect(merged == RecordChanges(upserts: values))
            #expect(parts == 3)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a released stream stops observing at once`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            do {
                let stream = await store.changes(in: "c")
                var iterator = stream.makeAsyncIterator()
                try await store.put("c", key: "a", data: Data("1"))
                #expect(await iterator.next() == RecordChanges(upserts: ["a": Data("1")]))
                #expect(store.observerCount("c") == 1)
            }
            #expect(store.observerCount("c") == 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `cancelling a waiting consumer ends its stream`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let stream = await store.changes(in: "c")
            let consumer = Task {
                var iterator = stream.makeAsyncIterator()
                return await iterator.next()
            }
            // The handshake: the consumer is parked in the watcher, waiting for a change.
            try await waitUntil("the consumer waits") { store.waitingConsumerCount("c") == 1 }
            consumer.cancel()
            #expect(try await withTimeLimit("the cancelled consumer's next()", timeout: .seconds(30)) { await consumer.value } == nil)
            #expect(store.observerCount("c") == 0, "the cancelled stream still observes")
            try await store.put("c", key: "a", data: Data("1"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a consumer cancelled before it waits gets the end of its stream`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let stream = await store.changes(in: "c")
            let cancelled = Gate()
            let consumer = Task {
                await cancelled.wait()
                var iterator = stream.makeAsyncIterator()
                return await iterator.next()
            }
            consumer.cancel()
            await cancelled.open()
            #expect(try await withTimeLimit("the cancelled consumer's next()", timeout: .seconds(30)) { await consumer.value } == nil)
            try await store.put("c", key: "a", data: Data("1"))
        }
    }
}
