import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// `suspendObservation()` leaves the process holding no lock of the library's, and
/// `resumeObservation()` delivers everything committed meanwhile: the log when nothing changed,
/// one full state per stream when something did (writers need not log while nobody observes).
@Suite struct ObservationSuspensionTests {
    @Test func `a suspended store holds no lock on the observers file and takes it again on resume`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "a", data: Data("1"))
            let stream = await store.changes(in: "c")
            // Another descriptor of the lock file, as another process would see it.
            let probe = try ObserverLock(storePath: url.path)
            #expect(!probe.lockIfUnobserved(), "a store with a stream holds the observers' lock")

            store.suspendObservation()
            #expect(store.watcher.stateForTesting().observerLock == false)
            #expect(probe.lockIfUnobserved(), "a suspended store still holds the observers' lock")
            probe.release()

            store.resumeObservation()
            #expect(!probe.lockIfUnobserved(), "a resumed store does not hold the observers' lock")
            _ = stream
        }
    }

    @Test func `what another store writes while observation is suspended arrives as a full state on resume`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let observer = RecordStore(url: url)
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "kept", data: Data("0"))
            let stream = await observer.changes(in: "c")
            observer.suspendObservation()
            // Nobody observes now: the writer logs nothing for these.
            try await writer.put("c", key: "new", data: Data("1"))
            try await writer.apply("c", changes: RecordChanges(upserts: [:], removals: ["kept"]))
            observer.resumeObservation()
            let first = try await firstElement(of: stream, timeout: .seconds(30))
            #expect(first.isFullState)
            #expect(first.upserts == ["new": Data("1")])
            // Then the log, as before.
            try await writer.put("c", key: "later", data: Data("2"))
            #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["later": Data("2")]))
        }
    }

    @Test func `a consumer waiting through a suspension is served on resume`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let observer = RecordStore(url: url)
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "a", data: Data("0"))
            let stream = await observer.changes(in: "c")
            // Whether the consumer parks before the suspension or during it, it waits without
            // being served until the resume.
            let waiter = Task { try await changes(of: stream, timeout: .seconds(30), until: { !$0.isEmpty }) }
            observer.suspendObservation()
            try await writer.put("c", key: "b", data: Data("1"))
            #expect(observer.watcher.stateForTesting() == (false, false, false, true))
            observer.resumeObservation()
            let served = try await waiter.value
            #expect(served.isFullState)
            #expect(served.upserts == ["a": Data("0"), "b": Data("1")])
        }
    }

    @Test func `a suspension without commits resumes from the log, not with a full state`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let observer = RecordStore(url: url)
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "a", data: Data("0"))
            let stream = await observer.changes(in: "c")
            observer.suspendObservation()
            observer.resumeObservation()
            try await writer.put("c", key: "b", data: Data("1"))
            let next = try await changes(of: stream, until: { !$0.isEmpty })
            #expect(next == RecordChanges(upserts: ["b": Data("1")]))
            #expect(!next.isFullState)
        }
    }

    @Test func `a stream taken while suspended hears what was written before resume`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            let observer = RecordStore(url: url)
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "a", data: Data("0"))
            observer.suspendObservation()
            let stream = await observer.changes(in: "c")
            try await writer.put("c", key: "b", data: Data("1"))
            observer.resumeObservation()
            let first = try await changes(of: stream, timeout: .seconds(30), until: { !$0.isEmpty })
            #expect(first.upserts["b"] == Data("1"))
        }
    }

    @Test func `suspending an in-memory store changes nothing`() async throws {
        let store = RecordStore.inMemory()
        let stream = await store.changes(in: "c")
        store.suspendObservation()
        try await store.put("c", key: "a", data: Data("1"))
        #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["a": Data("1")]))
        store.resumeObservation()
    }

    #if os(Linux)
        /// The POSIX locks this process holds on `url` and its `-shm` (from /proc/locks).
        private func locksHeld(on url: URL) throws -> [String] {
            let inodes = try [url.path, url.path + "-shm"].compactMap { path -> UInt64? in
                guard FileManager.default.fileExists(atPath: path) else { return nil }
                return (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? NSNumber)?.uint64Value
            }
            let pid = String(ProcessInfo.processInfo.processIdentifier)
            return try String(contentsOfFile: "/proc/locks", encoding: .utf8).split(separator: "\n").map(String.init).filter { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 5, fields[4] == pid, let inode = fields[5].split(separator: ":").last.flatMap({ UInt64($0) })
                else { return false }
                return inodes.contains(inode)
            }
        }

        @Test func `a suspended and closed store with a stream holds no lock on the store, and its stream goes on`() async throws {
            try await withTemporaryDirectory { directory in
                let url = directory.appendingPathComponent("shared.sqlite")
                let store = RecordStore(url: url)
                try await store.put("c", key: "a", data: Data("1"))
                let stream = await store.changes(in: "c")
                store.suspendObservation()
                await store.close()
                let held = try locksHeld(on: url)
                #expect(held.isEmpty, "\(held)")
                // Written meanwhile by another store: a full state on resume.
                let writer = RecordStore(url: url)
                try await writer.put("c", key: "b", data: Data("2"))
                await writer.close()
                store.resumeObservation()
                let first = try await firstElement(of: stream, timeout: .seconds(30))
                #expect(first.isFullState)
                #expect(first.upserts == ["a": Data("1"), "b": Data("2")])
            }
        }
    #endif
}
