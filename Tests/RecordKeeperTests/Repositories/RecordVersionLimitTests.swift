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

    @Test func `a put or an apply over a record at the largest version fails, naming it, and writes nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(durability: .normal))
            try await store.put("notes", key: "a", data: Data("1".utf8))
            try await store.put("notes", key: "b", data: Data("2".utf8))
            await store.close()
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            try connection.execute("UPDATE records SET version = 9223372036854775807 WHERE key = 'a'")
            let before = try await store.allRecords("notes")

            // One record: the store's single-upsert path.
            let single = await #expect(throws: RecordStoreError.self) {
                try await store.put("notes", key: "a", data: Data("3".utf8))
            }
            #expect(single?.code == .malformedRecord)
            #expect(single?.collection == "notes")
            #expect(single?.key == "a")

            // Several records: the whole save is refused, the other record included.
            var changes = RecordChanges()
            changes["b"] = Data("4".utf8)
            changes["a"] = Data("5".utf8)
            let several = await #expect(throws: RecordStoreError.self) {
                try await store.apply("notes", changes: changes)
            }
            #expect(several?.code == .malformedRecord)
            #expect(several?.key == "a")
            #expect(try await store.allRecords("notes") == before)
        }
    }

    @Test func `a new record in a store whose version floor is the largest fails, naming the collection, and writes nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(durability: .normal))
            try await store.put("notes", key: "a", data: Data("1".utf8))
            await store.close()
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            try connection.execute("UPDATE store_meta SET value = 9223372036854775807 WHERE name = 'last_version'")
            let before = try await store.allRecords("notes")

            let single = await #expect(throws: RecordStoreError.self) {
                try await store.put("notes", key: "b", data: Data("2".utf8))
            }
            #expect(single?.code == .malformedRecord)
            #expect(single?.collection == "notes")

            var changes = RecordChanges()
            changes["b"] = Data("2".utf8)
            changes["c"] = Data("3".utf8)
            let several = await #expect(throws: RecordStoreError.self) {
                try await store.apply("notes", changes: changes)
            }
            #expect(several?.code == .malformedRecord)
            #expect(several?.collection == "notes")
            #expect(try await store.allRecords("notes") == before)
        }
    }
}

