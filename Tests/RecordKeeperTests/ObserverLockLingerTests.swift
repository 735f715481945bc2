import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// On Linux a write that found no change stream keeps the observers' lock for a moment after
/// its commit (`ChangeLogObserver.lingerInterval`), so the saves that follow do not lock and
/// unlock it again; it is released soon after, at `close()` and at `suspendObservation()`, and
/// a stream starting meanwhile waits for it and misses nothing. Apple platforms release it at
/// every commit.
@Suite struct ObserverLockLingerTests {
    @Test func `a write keeps the observers' lock after its commit only on Linux, and releases it soon`() async throws {
        try await withStore(.onDisk) { store, url in
            // Long enough that the release cannot run before the probe below.
            store.core.writer.withLock { $0.releaseDelay = .seconds(600) }
            try await store.put("c", key: "a", data: Data("1"))
            // Another descriptor of the lock file, as another process would see it.
            let probe = try ObserverLock(storePath: url.path)
            #expect(probe.lockIfUnobserved() != ChangeLogObserver.keepsLockBetweenTransactions)
            probe.release()
            #if os(Linux)
                #expect(ChangeLogObserver.keepsLockBetweenTransactions)
            #endif

            // With the usual delay, a save's lock is released soon after its commit.
            await store.close()
            let store = RecordStore(url: url)
            try await store.put("c", key: "b", data: Data("2"))
            try await waitUntil("the writer released the observers' lock", timeout: .seconds(30), polling: .milliseconds(1)) {
                guard probe.lockIfUnobserved() else { return false }
                probe.release()
                return true
            }
            #expect(!store.core.writer.withLock { state in (state.observers ?? []).contains { $0.holdsBetweenTransactions } })
        }
    }

    @Test func `close and suspension release the observers' lock at once`() async throws {
        try await withStore(.onDisk) { store, url in
            let probe = try ObserverLock(storePath: url.path)
            store.core.writer.withLock { $0.releaseDelay = .seconds(600) }
            try await store.put("c", key: "a", data: Data("1"))
            store.suspendObservation()
            #expect(probe.lockIfUnobserved(), "a suspended store holds the observers' lock")
            probe.release()
            store.resumeObservation()

            try await store.put("c", key: "b", data: Data("2"))
            await store.close()
            #expect(probe.lockIfUnobserved(), "a closed store holds the observers' lock")
            probe.release()
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func `suspending never waits for a running write, and a write while suspended keeps no lock`() async throws {
        try await withStore(.onDisk) { store, url in
            store.core.writer.withLock { $0.releaseDelay = .seconds(600) }
            try await store.put("c", key: "a", data: Data("1"))  // keeps the lock after its commit
            // A running transaction holds the writer's lock: here, this thread does, and a
            // suspension that waited for it would not return while it is held.
            let returned = store.core.writer.withLock { _ -> Bool in
                let done = DispatchSemaphore(value: 0)
                // A thread of its own: on Linux Dispatch's global queues are the threads Swift's
                // tasks run on, which other tests may all be using.
                Thread.detachNewThread {
                    store.suspendObservation()
                    done.signal()
                }
                return done.wait(timeout: .now() + 30) == .success
            }
            #expect(returned, "suspendObservation waited for the writer's lock")
            // Suspended, a write lets go of the lock at its end instead of keeping it.
            try await store.put("c", key: "b", data: Data("2"))
            let probe = try ObserverLock(storePath: url.path)
            #expect(probe.lockIfUnobserved(), "a write kept the observers' lock after its commit while suspended")
            probe.release()
            store.resumeObservation()
        }
    }

    @Test func `a write that rolls back releases the observers' lock at once`() async throws {
        try await withStore(.onDisk) { store, url in
            store.core.writer.withLock { $0.releaseDelay = .seconds(600) }
            try await store.put("c", key: "a", data: Data("1"))
            await store.close()
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await store.write { tx in
                    try tx.put("c", key: "b", data: Data("2"))
                    throw Refused()
                }
            }
            let probe = try ObserverLock(storePath: url.path)
            #expect(probe.lockIfUnobserved(), "a rolled-back write kept the observers' lock")
            probe.release()
        }
    }

    @Test(.timeLimit(.minutes(2)), .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
    func `a stream started by another store between two saves delivers every save after it`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let writer = RecordStore(url: url, options: .init(durability: .normal))
            let observer = RecordStore(url: url)
            for round in 0..<20 {
                // A save, then (while its store may still keep the lock) a stream of another store.
                try await writer.put("c", key: "before-\(round)", data: Data("x"))
                let stream = await observer.changes(in: "c")
                var iterator = stream.makeAsyncIterator()
                try await writer.put("c", key: "after-\(round)", data: Data("y"))
                var seen: Set<String> = []
                while !seen.contains("after-\(round)") {
                    guard let change = await iterator.next() else { break }
                    seen.formUnion(change.upserts.keys)
                }
                #expect(seen.contains("after-\(round)"))
            }
        }
    }

    /// The release must not wait for a thread of a global queue: an app (or another test) may
    /// hold all of them, blocked, and a stream waiting for the lock would then wait for ever.
    @Test(.timeLimit(.minutes(1)), .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
    func `the observers' lock is released while every thread of the global utility queue is blocked`() async throws {
        let gate = DispatchSemaphore(value: 0)
        let blockers = 64
        let started = Counter()
        for _ in 0..<blockers {
            DispatchQueue.global(qos: .utility).async {
                _ = started.increment()
                gate.wait()
            }
        }
        defer { for _ in 0..<blockers { gate.signal() } }
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let writer = RecordStore(url: url, options: .init(durability: .normal))
            let observer = RecordStore(url: url)
            try await writer.put("c", key: "before", data: Data("x"))
            let stream = await observer.changes(in: "c")
            var iterator = stream.makeAsyncIterator()
            try await writer.put("c", key: "after", data: Data("y"))
            var seen: Set<String> = []
            while !seen.contains("after") {
                guard let change = await iterator.next() else { break }
                seen.formUnion(change.upserts.keys)
            }
            #expect(seen.contains("after"))
            #expect(started.count > 0, "no utility thread was blocked: the test proved nothing")
            await writer.close()
            await observer.close()
        }
    }
}
