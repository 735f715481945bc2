import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// A record's version is a 64-bit counter. One at its largest value cannot be overwritten by a
/// save based on it: the save says so, names the record and writes nothing, where adding one
/// would overflow.
@Suite struct RecordVersionLimitTests {
    @Test func `a save based on a record at the largest version fails, naming it, and writes nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(durability: .normal))
            try await RecordRepository<Book>(store: store, collection: "books").save(Book(id: "a", title: "A"))
            await store.close()
            // Only a damaged or hand-edited file holds such a version.
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            try connection.execute("UPDATE records SET version = 9223372036854775807")
            let stored = try await store.record("books", key: "a")
            #expect(stored?.version == RecordVersion(Int64.max))

            let books = RecordRepository<Book>(store: store, collection: "books")
            _ = try await books.load()
            let error = await #expect(throws: RecordStoreError.self) {
                try await books.save(Book(id: "a", title: "B"))
            }
            #expect(error?.code == .malformedRecord)
            #expect(error?.collection == "books")
            #expect(error?.key == "a")
            #expect(try await store.record("books", key: "a") == stored)
        }
    }
}
