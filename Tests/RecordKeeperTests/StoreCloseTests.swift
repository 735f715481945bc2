import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// `close()`: a file store releases its connections and empties its log, reporting a
/// checkpoint it could not finish; an in-memory store, whose records live only in its
/// connection, keeps them.
@Suite struct StoreCloseTests {
    @Test func `closing an in-memory store keeps its records, and its change streams go on`() async throws {
        let store = RecordStore.inMemory()
        for index in 0..<5 { try await store.put("m", key: "k\(index)", data: Data("\(index)".utf8)) }
        var changes = await store.changes(in: "m").makeAsyncIterator()
        await store.close()
        #expect(try await store.read("m")?.count == 5)
        #expect(try await store.collections().map(\.name) == ["m"])
        try await store.put("m", key: "k8", data: Data("8".utf8))
        try await store.put("m", key: "k9", data: Data("9".utf8))
        // Both commits arrive, in one element or two: none is skipped.
        var heard: Set<String> = []
        while heard.count < 2, let change = await changes.next() { heard.formUnion(change.upserts.keys) }
        #expect(heard == ["k8", "k9"])
    }

    @Test func `a close whose checkpoint other connections hold off reports it and loses nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let log = EventLog()
            let store = RecordStore(url: url, options: .init(busyTimeout: .milliseconds(100), eventHandler: { log.append($0) }))
            try await store.put("notes", key: "a", data: Data("1".utf8))
            // Another program reads a snapshot that includes the commit, still in the log.
            let reader = try ForeignReadSnapshot(url)
            await store.close()
            reader.release()
            let failures = log.all.compactMap { event -> RecordStoreError? in
                if case .checkpointFailed(let error) = event { return error }
                return nil
            }
            #expect(failures.count == 1, "\(log.all)")
            #expect(failures.first?.code == .busy)
            #expect(failures.first?.operation == .close)
            #expect(try await RecordStore(url: url).value("notes", key: "a") == Data("1".utf8))
        }
    }
}
