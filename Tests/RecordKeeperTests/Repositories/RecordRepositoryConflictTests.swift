import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

@Suite struct RecordRepositoryConflictTests {
    @Test(arguments: StoreKind.allCases)
    func `an overwrite of the stored bytes or of an absent item confirms the version it leaves`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Book>(store: store, collection: "books").save(Book(id: "a", title: "A"))
            let stored = try #require(try await store.record("books", key: "a"))
            // A repository that never loaded: the same bytes change nothing, and a new item is inserted.
            let other = RecordRepository<Book>(store: store, collection: "books")
            try await other.save([Book(id: "a", title: "A"), Book(id: "b", title: "B")], onConflict: .overwrite)
            #expect(try await store.record("books", key: "a") == stored)
            // Both versions are confirmed: saves based on them go through.
            try await other.save([Book(id: "a", title: "A2"), Book(id: "b", title: "B2")])
            #expect(try await store.record("books", key: "a")?.version == RecordVersion(stored.version.rawValue + 1))
            #expect(try await other.load().map(\.title).sorted() == ["A2", "B2"])
        }
    }

    @Test(arguments: StoreKind.allCases, WriterOrder.allCases)
    func `two repositories saving the same loaded item: one succeeds, the other conflicts`(
        kind: StoreKind, order: WriterOrder
    ) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Book>(store: store, collection: "books").save(Book(id: "a", title: "A"))
            let first = RecordRepository<Book>(store: store, collection: "books")
            let second = RecordRepository<Book>(store: store, collection: "books")
            _ = try await first.load()
            _ = try await second.item("a")

            let (winner, loser) = order == .firstThenSecond ? (first, second) : (second, first)
            try await winner.save(Book(id: "a", title: "winner"))
            let conflict = await #expect(throws: RecordConflict.self) {
                try await loser.save(Book(id: "a", title: "loser"))
            }
            #expect(conflict?.collection == "books")
            #expect(conflict?.keys == ["a"])
            #expect(try await store.read("books") == ["a": try RecordCoding.encode(Book(id: "a", title: "winner"))])

            // After loading again the loser saves on top of the winner's version.
            #expect(try await loser.item("a")?.title == "winner")
            try await loser.save(Book(id: "a", title: "merged"))
            #expect(try await winner.load().map(\.title) == ["merged"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `repositories saving different items never conflict`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let first = RecordRepository<Book>(store: store, collection: "books")
            let second = RecordRepository<Book>(store: store, collection: "books")
            try await first.save([Book(id: "a", title: "A")])
            _ = try await second.load()
            try await first.save(Book(id: "a", title: "A2"))
            try await second.save(Book(id: "b", title: "B"))
            try await first.save(Book(id: "c", title: "C"))
            try await second.delete("b")
            #expect(try await first.load().map(\.id) == ["a", "c"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `saving an item never seen that already exists is a conflict`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Book>(store: store, collection: "books").save(Book(id: "a", title: "theirs"))
            let mine = RecordRepository<Book>(store: store, collection: "books")
            let conflict = await #expect(throws: RecordConflict.self) {
                try await mine.save(Book(id: "a", title: "mine"))
            }
            #expect(conflict?.keys == ["a"])
            #expect(conflict?.currentVersions["a"] != nil)
            #expect(try await mine.item("a")?.title == "theirs")
            try await mine.save(Book(id: "a", title: "mine"))
            #expect(try await mine.item("a")?.title == "mine")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflict on one item writes nothing of the whole save`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let mine = RecordRepository<Book>(store: store, collection: "books")
            try await mine.save(Book(id: "a", title: "A"))
            try await RecordRepository<Book>(store: store, collection: "books").save(Book(id: "a", title: "A", pages: 7), onConflict: .overwrite)
            await #expect(throws: RecordConflict.self) {
                try await mine.save([Book(id: "a", title: "A!"), Book(id: "b", title: "B")])
            }
            #expect(try await store.read("books")?.keys.sorted() == ["a"])
            #expect(try await mine.item("a")?.pages == 7)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `overwriting is an explicit last-writer-wins choice`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let first = RecordRepository<Book>(store: store, collection: "books")
            let second = RecordRepository<Book>(store: store, collection: "books")
            try await first.save(Book(id: "a", title: "first"))
            try await second.save(Book(id: "a", title: "second"), onConflict: .overwrite)
            #expect(try await first.load().map(\.title) == ["second"])
            // Having confirmed its own write, the second repository saves normally afterwards.
            try await second.save(Book(id: "a", title: "second again"))
            await #expect(throws: RecordConflict.self) { try await first.delete("a") }
            try await first.delete("a", onConflict: .overwrite)
            #expect(try await store.read("books") == [:])
        }
    }

    @Test(arguments: StoreKind.allCases, WriterOrder.allCases)
    func `deleting an item someone else changed is a conflict`(kind: StoreKind, order: WriterOrder) async throws {
        try await withStore(kind) { store, _ in
            let editor = RecordRepository<Book>(store: store, collection: "books")
            let remover = RecordRepository<Book>(store: store, collection: "books")
            try await editor.save(Book(id: "a", title: "A"))
            _ = try await remover.load()
            switch order {
            case .firstThenSecond:
                try await editor.save(Book(id: "a", title: "edited"))
                await #expect(throws: RecordConflict.self) { try await remover.delete("a") }
                #expect(try await store.read("books")?.keys.sorted() == ["a"])
            case .secondThenFirst:
                try await remover.delete("a")
                // The editor based its save on a record that no longer exists.
                await #expect(throws: RecordConflict.self) { try await editor.save(Book(id: "a", title: "edited")) }
                #expect(try await store.read("books") == [:])
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `deleting an item someone else already deleted is no conflict and returns false`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let first = RecordRepository<Book>(store: store, collection: "books")
            let second = RecordRepository<Book>(store: store, collection: "books")
            try await first.save([Book(id: "a", title: "A"), Book(id: "b", title: "B")])
            _ = try await second.load()
            #expect(try await first.delete("a"))
            let message = OutboxMessage(kind: "book.delete", payload: Data("a".utf8))
            #expect(try await second.delete("a", enqueue: [message]) == false, "gone, as asked")
            #expect(try await store.outbox.pending().map(\.kind) == ["book.delete"], "its operation is queued all the same")
            #expect(try await store.read("books")?.keys.sorted() == ["b"])
            // Deleted and stored again meanwhile: a new record the deleter never saw conflicts.
            try await first.save(Book(id: "b", title: "B2"))
            _ = try await first.delete("b")
            try await first.save(Book(id: "b", title: "B3"))
            await #expect(throws: RecordConflict.self) { try await second.delete("b") }
            #expect(try await store.read("books")?.keys.sorted() == ["b"])
            // A collection removed meanwhile stays removed: the delete re-creates nothing.
            _ = try await second.load()
            try await store.removeCollection("books")
            #expect(try await second.delete("b") == false)
            #expect(try await store.read("books") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `replaceAll conflicts when others added, changed or removed items`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let mine = RecordRepository<Book>(store: store, collection: "books")
            let theirs = RecordRepository<Book>(store: store, collection: "books")
            try await mine.save([Book(id: "a", title: "A"), Book(id: "b", title: "B")])
            _ = try await theirs.load()
            try await theirs.save(Book(id: "new", title: "N"))

            let added = await #expect(throws: RecordConflict.self) {
                try await mine.replaceAll(with: [Book(id: "c", title: "C")])
            }
            #expect(added?.keys == ["new"])
            #expect(try await store.read("books")?.keys.sorted() == ["a", "b", "new"])

            try await theirs.delete("b")
            _ = try await mine.load()
            try await mine.replaceAll(with: [Book(id: "c", title: "C")])
            #expect(try await store.read("books")?.keys.sorted() == ["c"])

            // An explicit overwrite replaces whatever is stored.
            try await theirs.replaceAll(with: [Book(id: "d", title: "D")], onConflict: .overwrite)
            #expect(try await store.read("books")?.keys.sorted() == ["d"])
        }
    }
}
