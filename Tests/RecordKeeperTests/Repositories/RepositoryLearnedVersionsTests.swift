import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// A repository learns the versions that writes through its own `RecordStore` give its
/// records, so the app does not conflict with itself; every other writer still conflicts.
@Suite struct RepositoryLearnedVersionsTests {
    @Test(arguments: StoreKind.allCases)
    func `a save after store.write changed the item in this process does not conflict with itself`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            let edited = try RecordCoding.encode(Book(id: "a", title: "edited through the store"))
            try await store.write { tx in
                try tx.put("books", key: "a", data: edited)
                try tx.enqueue(OutboxMessage(kind: "book.edit", payload: edited))
            }
            try await books.save(Book(id: "a", title: "then through the repository"))
            #expect(try await books.item("a")?.title == "then through the repository")
            #expect(try await store.record("books", key: "a")?.version == RecordVersion(3))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `items created and removed through the store are learned too`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            _ = try await books.load()
            try await store.put("books", key: "new", data: try RecordCoding.encode(Book(id: "new", title: "N")))
            try await books.save(Book(id: "new", title: "saved over the store's insert"))
            try await books.save(Book(id: "gone", title: "G"))
            var changes = RecordChanges()
            changes["gone"] = nil
            try await store.apply("books", changes: changes)
            try await books.save(Book(id: "gone", title: "created again"))
            try await store.removeCollection("books")
            try await books.save(Book(id: "new", title: "after the collection was removed"))
            #expect(try await books.load().map(\.title) == ["after the collection was removed"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `another repository's change still conflicts, also when the store wrote on top of it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let mine = try await staleRepository(on: store)
            await #expect(throws: RecordConflict.self) { try await mine.save(Book(id: "a", title: "mine")) }
            // The store writing after their change does not make their change known to `mine`.
            try await store.put("books", key: "a", data: try RecordCoding.encode(Book(id: "a", title: "store")))
            let conflict = await #expect(throws: RecordConflict.self) { try await mine.delete("a") }
            #expect(conflict?.expectedVersions["a"] == .some(RecordVersion(1)))
            #expect(try await store.value("books", key: "a") == (try RecordCoding.encode(Book(id: "a", title: "store"))))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `another device's change pulled by sync is not learned`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { devices in
            let server = InMemorySyncServer()
            let (phone, tablet) = (RecordSync(store: devices[0], server: server), RecordSync(store: devices[1], server: server))
            try await phone.start(space: "alice", collections: ["books"])
            try await tablet.start(space: "alice", collections: ["books"])
            let books = RecordRepository<Book>(store: devices[0], collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            _ = try await phone.sync()
            _ = try await tablet.sync()
            try await devices[1].put("books", key: "a", data: try RecordCoding.encode(Book(id: "a", title: "tablet")))
            _ = try await tablet.sync()
            _ = try await phone.sync()
            #expect(try await devices[0].value("books", key: "a") == (try RecordCoding.encode(Book(id: "a", title: "tablet"))))
            await #expect(throws: RecordConflict.self) { try await books.save(Book(id: "a", title: "phone")) }
        }
    }

    @Test func `writes through another store on the file are not learned`() async throws {
        try await withStore(.onDisk) { store, url in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            let other = RecordStore(url: url)
            try await other.put("books", key: "a", data: try RecordCoding.encode(Book(id: "a", title: "other store")))
            await #expect(throws: RecordConflict.self) { try await books.save(Book(id: "a", title: "mine")) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a repository that never saw a stored item still conflicts when the store overwrites it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Book>(store: store, collection: "books").save(Book(id: "a", title: "A"))
            let unseen = RecordRepository<Book>(store: store, collection: "books")
            try await store.put("books", key: "a", data: try RecordCoding.encode(Book(id: "a", title: "store")))
            await #expect(throws: RecordConflict.self) { try await unseen.save(Book(id: "a", title: "mine")) }
        }
    }
}
