import TestHelpers
import Dispatch
import Foundation
import Testing
@testable import RecordKeeper

/// A file store reads on a small pool of readers (`ReaderPool`), each a connection with its own
/// queue: a long read does not hold the others up, and a reader opens only when reads overlap.
@Suite(.disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
struct ReaderPoolTests {
    @Test(.timeLimit(.minutes(2)))
    func `a read answers while a long snapshot holds a reader`() async throws {
        try await withStore(.onDisk) { store, _ in
            try await store.put("c", key: "a", data: Data("1"))
            let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            let releasedByDeadline = Protected(false)
            let snapshot = Task {
                try await store.snapshot { snapshot in
                    entered.signal()
                    release.wait()  // the gate: this reader is held until the test releases it
                    return try snapshot.read("c")?.count
                }
            }
            await wait(for: entered)
            let deadline = Task {
                // Cancelled once the read answered: then nothing to release here.
                guard (try? await Task.sleep(for: .seconds(5))) != nil else { return }
                releasedByDeadline.withLock { $0 = true }
                release.signal()
            }
            // Not a point read: it never runs inline, so it goes to a reader's queue.
            let read = try await store.read("c")
            let answeredBeside = releasedByDeadline.withLock { !$0 }
            deadline.cancel()
            _ = await deadline.result
            if answeredBeside { release.signal() }
            #expect(try await snapshot.value == 1)
            #expect(read == ["a": Data("1")])
            #expect(answeredBeside, "the read waited for the snapshot to end")
            #expect(Self.openReaders(store) == 2)
        }
    }

    @Test func `reads one after another open a single reader`() async throws {
        try await withStore(.onDisk) { store, _ in
            try await store.put("c", key: "a", data: Data("1"))
            #expect(Self.openReaders(store) == 0, "a write opens no reader")
            for _ in 0..<20 {
                #expect(try await store.read("c")?.count == 1)
                #expect(try await store.value("c", key: "a") == Data("1"))
                _ = try await store.collections()
            }
            #expect(Self.openReaders(store) == 1)
        }
    }

    @Test func `closing the store closes its readers, and the next read opens one again`() async throws {
        try await withStore(.onDisk) { store, _ in
            try await store.put("c", key: "a", data: Data("1"))
            #expect(try await store.read("c")?.count == 1)
            #expect(Self.openReaders(store) == 1)
            await store.close()
            #expect(Self.openReaders(store) == 0)
            #expect(!store.core.isOpen)
            #expect(try await store.read("c")?.count == 1)
            #expect(Self.openReaders(store) == 1)
            #expect(!store.core.isOpen, "a read never opens the writer")
        }
    }

    @Test func `an in-memory store has no readers: its reads run on its one connection`() async throws {
        try await withStore(.inMemory) { store, _ in
            #expect(store.core.readers == nil)
            try await store.put("c", key: "a", data: Data("1"))
            #expect(try await store.read("c") == ["a": Data("1")])
        }
    }

    private static func openReaders(_ store: RecordStore) -> Int {
        (store.core.readers?.readers ?? []).filter { reader in reader.withLock { $0.connection != nil } }.count
    }
}
