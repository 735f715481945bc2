import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

@Suite struct RecordRepositoryTests {
    @Test(arguments: StoreKind.allCases)
    func `a collection never established loads as an empty list`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            let loaded = try await books.load()
            #expect(loaded.isEmpty)
            #expect(try await books.item("moby-dick") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `saved items load back sorted by key, one record per item`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "b", title: "B"), Book(id: "a", title: "A")])
            try await books.save(Book(id: "c", title: "C"))
            #expect(try await books.load().map(\.id) == ["a", "b", "c"])
            #expect(try await books.item("b") == Book(id: "b", title: "B"))
            let stored = try #require(try await store.read("books"))
            #expect(stored.keys.sorted() == ["a", "b", "c"])
            #expect(stored["a"] == Data(#"{"id":"a","pages":100,"title":"A"}"#))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an ID saved twice in one save stores the later item`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            // More than 64 items (sorted) and fewer (also sorted now): the later duplicate wins.
            for count in [3, 100] {
                var items = (0..<count).map { Book(id: "b\($0)", title: "first") }
                items.append(Book(id: "b1", title: "second"))
                items.append(Book(id: "b1", title: "third"))
                try await books.save(items)
                #expect(try await books.item("b1")?.title == "third")
                #expect(try await books.load().count == count)
                try await books.save(Book(id: "b1", title: "after"))  // its version was confirmed
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `saving some items upserts exactly those and removes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "a", title: "A"), Book(id: "b", title: "B")])
            try await books.save([Book(id: "b", title: "B2"), Book(id: "c", title: "C")])
            #expect(try await books.load() == [
                Book(id: "a", title: "A"), Book(id: "b", title: "B2"), Book(id: "c", title: "C"),
            ])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a save writes only the items that changed`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            let all = [Book(id: "a", title: "A"), Book(id: "b", title: "B"), Book(id: "c", title: "C")]
            try await books.save(all)
            let before = try await RecordVersion.all(in: store, "books")
            var raw = await store.changes(in: "books").makeAsyncIterator()

            var edited = all
            edited[1].pages = 250
            try await books.save(edited)

            #expect(await raw.next() == RecordChanges(upserts: ["b": try RecordCoding.encode(edited[1])]))
            let after = try await RecordVersion.all(in: store, "books")
            #expect(after["a"] == before["a"])
            #expect(after["c"] == before["c"])
            #expect(try #require(after["b"]) > #require(before["b"]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an unchanged item encodes to the same bytes and is not rewritten`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let notes = RecordRepository<Note>(store: store, collection: "notes")
            let note = Note(id: UUID(), text: "¿Dónde está?", created: Date(timeIntervalSinceReferenceDate: 812_345_678.123_456_7))
            try await notes.save(note)
            let first = try #require(try await store.record("notes", key: note.id.uuidString))

            // A fresh repository decodes and saves it again: same bytes, same version.
            let other = RecordRepository<Note>(store: store, collection: "notes")
            let loaded = try #require(try await other.item(note.id))
            #expect(loaded == note)
            #expect(loaded.created == note.created)
            try await other.save(loaded)
            let second = try #require(try await store.record("notes", key: note.id.uuidString))
            #expect(second == first)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `delete removes only that item`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "a", title: "A"), Book(id: "b", title: "B")])
            try await books.delete("a")
            #expect(try await books.load().map(\.id) == ["b"])
            // Deleting what is not stored is not an error.
            try await books.delete("a")
            #expect(try await store.read("books")?.keys.sorted() == ["b"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `replaceAll makes the given items the whole collection`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "a", title: "A"), Book(id: "b", title: "B")])
            try await books.replaceAll(with: [Book(id: "b", title: "B"), Book(id: "c", title: "C")])
            #expect(try await books.load().map(\.id) == ["b", "c"])
            // The repository confirmed what it wrote: it can save on top of it.
            try await books.save(Book(id: "c", title: "C2"))
            try await books.replaceAll(with: [])
            #expect(try await store.read("books") == [:])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `record keys follow the ID rule`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let id = UUID()
            try await RecordRepository<Note>(store: store, collection: "notes")
                .save(Note(id: id, text: "n", created: Date(timeIntervalSinceReferenceDate: 0)))
            try await RecordRepository<Chapter>(store: store, collection: "chapters").save(Chapter(id: 42, title: "c"))
            let slots = RecordRepository<Slot>(store: store, collection: "slots")
            try await slots.save(Slot(id: .init(shelf: 2, position: 7), label: "s"))
            let cards = RecordRepository<Card>(store: store, collection: "cards")
            try await cards.save(Card(id: .init(deck: "verbs", number: 3), front: "ser"))

            #expect(try await store.read("notes")?.keys.sorted() == [id.uuidString])
            #expect(try await store.read("chapters")?.keys.sorted() == ["42"])
            #expect(try await store.read("slots")?.keys.sorted() == [#"{"position":7,"shelf":2}"#])
            #expect(try await store.read("cards")?.keys.sorted() == ["verbs#3"])
            #expect(try await slots.item(.init(shelf: 2, position: 7))?.label == "s")
            #expect(try await cards.load().map(\.front) == ["ser"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a record that does not decode fails the load, naming collection and key`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "a", title: "A"), Book(id: "c", title: "C")])
            try await store.put("books", key: "b", data: Data(#"{"id":"b","title":7}"#))

            let error = await #expect(throws: RepositoryError.self) { try await books.load() }
            #expect(error?.code == .undecodableRecord)
            #expect(error?.collection == "books")
            #expect(error?.key == "b")
            #expect(error?.underlying is DecodingError)
            #expect(error?.localizedDescription.contains(#"key "b""#) == true)

            let single = await #expect(throws: RepositoryError.self) { try await books.item("b") }
            #expect(single?.key == "b")
            // The other records are intact, and the bad one was left as it was.
            #expect(try await store.value("books", key: "b") == Data(#"{"id":"b","title":7}"#))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a record stored under a key its item's ID does not give is reported`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await store.put("books", key: "wrong", data: try RecordCoding.encode(Book(id: "right", title: "R")))
            let error = await #expect(throws: RepositoryError.self) { try await books.load() }
            #expect(error?.code == .keyMismatch)
            #expect(error?.key == "wrong")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a save whose commit fails confirms nothing and can be retried`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            try await store.failNextCommitForTesting()
            let error = await #expect(throws: RecordStoreError.self) {
                try await books.save([Book(id: "a", title: "A2"), Book(id: "b", title: "B")])
            }
            #expect(error?.collection == "books", "a failed commit names the repository's collection")
            #expect(try await store.read("books")?.keys.sorted() == ["a"])
            #expect(try await books.item("a")?.title == "A")
            // Still based on the confirmed version of "a" and on "b" being absent.
            try await books.save([Book(id: "a", title: "A2"), Book(id: "b", title: "B")])
            #expect(try await books.load().map(\.title) == ["A2", "B"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an item that cannot be encoded writes nothing`(kind: StoreKind) async throws {
        struct Measurement: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var value: Double
        }
        try await withStore(kind) { store, _ in
            let measurements = RecordRepository<Measurement>(store: store, collection: "m")
            try await measurements.save(Measurement(id: "ok", value: 1))
            let error = await #expect(throws: RepositoryError.self) {
                try await measurements.save([Measurement(id: "x", value: 2), Measurement(id: "nan", value: .nan)])
            }
            #expect(error?.code == .unencodableValue)
            #expect(error?.key == "nan")
            #expect(try await store.read("m")?.keys.sorted() == ["ok"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `concurrent saves on one repository take effect one at a time`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for pages in 1...20 {
                    group.addTask { try await books.save(Book(id: "a", title: "A", pages: pages)) }
                }
                try await group.waitForAll()
            }
            // Each save was based on the version the one before it confirmed: none conflicted.
            let pages = try #require(try await books.item("a")).pages
            #expect((1...20).contains(pages))
        }
    }
    @Test(arguments: StoreKind.allCases)
    func `IDs that differ only in Unicode normalization are one record`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            let decomposed = "cafe\u{301}"
            let precomposed = "caf\u{E9}"
            try await books.save(Book(id: decomposed, title: "first"))
            // The same ID to Swift: based on the confirmed version, so no conflict.
            try await books.save(Book(id: precomposed, title: "second"))
            #expect(try await store.read("books")?.count == 1)
            #expect(try await books.load().map(\.title) == ["second"])
            var changes = await books.changes().makeAsyncIterator()
            try await books.delete(decomposed)
            #expect(try await changes.next() == RepositoryChange(removed: [precomposed]))
        }
    }
}
