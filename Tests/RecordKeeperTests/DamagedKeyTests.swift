import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// A record key that is not valid UTF-8 (a damaged file, or another program's write) is
/// reported, never read as another key: replacing its invalid bytes with U+FFFD would make it
/// a different key, which an export then carries into the next store.
@Suite struct DamagedKeyTests {
    /// A closed store whose record "k\u{FF}" … has the key bytes `6B FF` (not UTF-8).
    static func storeWithDamagedKey(in directory: URL) async throws -> URL {
        let url = directory.appendingPathComponent("records.sqlite")
        let store = RecordStore(url: url)
        try await store.replace("notes", values: ["a": Data("1".utf8), "k": Data("2".utf8)])
        try await RecordRepository<Chapter>(store: store, collection: "chapters").save([Chapter(id: 1, title: "One")])
        await store.close()
        let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
        try connection.execute("UPDATE records SET key = CAST(X'6BFF' AS TEXT) WHERE key = 'k'")
        return url
    }

    @Test func `reads of a collection holding such a key name it and read no other key in its place`() async throws {
        try await withTemporaryDirectory { directory in
            let store = RecordStore(url: try await Self.storeWithDamagedKey(in: directory))
            for read in [{ _ = try await store.read("notes") }, { _ = try await store.allRecords("notes") }] {
                let error = await #expect(throws: RecordStoreError.self) { try await read() }
                #expect(error?.code == .malformedRecord)
                #expect(error?.collection == "notes")
                #expect(error?.key == "k\u{FFFD}")
                #expect(error?.errorDescription?.contains("not valid UTF-8") == true, "\(String(describing: error))")
            }
            let snapshotError = await #expect(throws: RecordStoreError.self) {
                try await store.snapshot { snapshot in try snapshot.forEachRecord(in: "notes") { _ in } }
            }
            #expect(snapshotError?.code == .malformedRecord)
            // SQLite's integrity check does not look at text encodings; the store's does.
            #expect(try await store.integrityCheck()
                    == ["collection \"notes\": the key \"k\u{FFFD}\" is not valid UTF-8 (shown with U+FFFD for the invalid bytes)"])
            // Other collections read as ever.
            #expect(try await RecordRepository<Chapter>(store: store, collection: "chapters").load() == [Chapter(id: 1, title: "One")])
            await store.close()
        }
    }

    @Test func `paging and starting sync over such a key refuse it instead of carrying another key`() async throws {
        try await withTemporaryDirectory { directory in
            let store = RecordStore(url: try await Self.storeWithDamagedKey(in: directory))
            // Paged reads: a key read with U+FFFD would also page forever (it sorts below FF).
            let paged = await #expect(throws: RecordStoreError.self) { _ = try await store.records("notes", after: "a", limit: 1) }
            #expect(paged?.code == .malformedRecord)
            // Sync captures the collection's records: none goes out under another key.
            let server = InMemorySyncServer()
            let sync = RecordSync(store: store, server: server)
            await #expect(throws: (any Error).self) {
                try await sync.start(space: "s", collections: ["notes"])
                _ = try await sync.sync()
            }
            let page = try await server.pull(space: "s", after: .start, limit: 10)
            #expect(!page.changes.contains { $0.key.unicodeScalars.contains("\u{FFFD}") }, "\(page.changes.map(\.key))")
            await store.close()
        }
    }
}
