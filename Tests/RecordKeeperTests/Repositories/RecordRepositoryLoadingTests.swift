import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Partial loads that name what they skipped, and `loadIfPresent` that creates nothing.
@Suite struct RecordRepositoryLoadingTests {
    /// Stores three good books and two records that are no books.
    private func storeMixed(_ store: RecordStore) async throws {
        let books = RecordRepository<Book>(store: store, collection: "books")
        try await books.save([Book(id: "a", title: "A"), Book(id: "c", title: "C"), Book(id: "e", title: "E")])
        try await store.put("books", key: "b", data: Data(#"{"id":"b"}"#.utf8))                     // no title
        try await store.put("books", key: "d", data: Data(#"{"id":"x","title":"X","pages":1}"#.utf8))  // wrong key
    }

    // MARK: Partial load

    @Test(arguments: StoreKind.allCases)
    func `a partial load returns exactly the decodable items and names the others`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await storeMixed(store)
            let before = try await store.allRecords("books")
            let books = RecordRepository<Book>(store: store, collection: "books")
            let result = try await books.loadPartial()
            #expect(result.items.map(\.id) == ["a", "c", "e"])
            #expect(result.skipped.map(\.key) == ["b", "d"])
            #expect(result.skipped.map(\.error.code) == [.undecodableRecord, .keyMismatch])
            #expect(result.skipped[0].error.underlying is DecodingError)
            #expect(!result.isComplete)
            #expect(try await store.allRecords("books") == before, "skipped records stay as they are")
            // load() stays all-or-error.
            let error = await #expect(throws: RepositoryError.self) { try await books.load() }
            #expect(error?.key == "b")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a skipped key counts as unseen so a save conflicts instead of replacing it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await storeMixed(store)
            let books = RecordRepository<Book>(store: store, collection: "books")
            _ = try await books.loadPartial()
            try await books.save(Book(id: "a", title: "A, revised"))
            await #expect(throws: RecordConflict.self) { try await books.save(Book(id: "b", title: "B")) }
            #expect(try await store.value("books", key: "b") == Data(#"{"id":"b"}"#.utf8))
            try await books.save(Book(id: "b", title: "B"), onConflict: .overwrite)
            #expect(try await books.loadPartial().skipped.map(\.key) == ["d"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a skipped record the store's own API wrote before the load still conflicts`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            // The repository exists first, so it is told about the store's own writes.
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            try await store.put("books", key: "bad", data: Data("garbage".utf8))
            try await store.put("books", key: "c", data: Data(#"{"id":"c","title":"C","pages":1}"#.utf8))
            await #expect(throws: RepositoryError.self) { try await books.load() }
            #expect(try await books.loadPartial().skipped.map(\.key) == ["bad"])

            await #expect(throws: RecordConflict.self) { try await books.save(Book(id: "bad", title: "Bad")) }
            #expect(try await store.value("books", key: "bad") == Data("garbage".utf8))
            // The records that loaded, and store writes after the load, are bases as before.
            try await books.save(Book(id: "c", title: "C, revised"))
            try await store.put("books", key: "a", data: Data(#"{"id":"a","title":"A by the store","pages":1}"#.utf8))
            try await books.save(Book(id: "a", title: "A, revised"))
            #expect(try await books.loadPartial().items.map(\.title) == ["A, revised", "C, revised"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a partial load of a clean or absent collection is complete`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            #expect(try await books.loadPartial() == PartialLoad(items: [], skipped: []))
            try await books.save(Book(id: "a", title: "A"))
            let result = try await books.loadPartial()
            #expect(result.isComplete)
            #expect(result.items == [Book(id: "a", title: "A")])
        }
    }

    // MARK: loadIfPresent

    @Test func `loadIfPresent on a store that does not exist returns nil and creates nothing`() async throws {
        try await withTemporaryDirectory { (directory: URL) async throws in
            let folder = directory.appendingPathComponent("Library/Records")
            let store = RecordStore(url: folder.appendingPathComponent("records.sqlite"))
            let books = RecordRepository<Book>(store: store, collection: "books")
            #expect(try await books.loadIfPresent() == nil)
            #expect(!FileManager.default.fileExists(atPath: folder.path), "no directory, no file")
            #expect(try await books.load() == [], "load() keeps returning [] as documented")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `loadIfPresent tells a never established collection from an empty one`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            #expect(try await books.loadIfPresent() == nil)
            try await store.put("other", key: "k", data: Data())
            #expect(try await books.loadIfPresent() == nil, "an open store without the collection")
            #expect(try await store.read("books") == nil, "nothing was created")
            try await books.save(Book(id: "a", title: "A"))
            #expect(try await books.loadIfPresent() == [Book(id: "a", title: "A")])
            try await books.delete("a")
            #expect(try await books.loadIfPresent() == [])
        }
    }

    @Test func `loadIfPresent migrates an existing collection like load`() async throws {
        try await withStore(.onDisk) { store, _ in
            try await RecordRepository<ReadingApp.BookV1>(store: store, collection: "books").save(ReadingApp.version1Books)
            let books = RecordRepository<ReadingApp.BookV2>(
                store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            #expect(try await books.loadIfPresent() == ReadingApp.migratedBooks)
        }
    }
}
