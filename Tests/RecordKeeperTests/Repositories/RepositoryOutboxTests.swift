import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

/// Repositories and documents enqueue outbox operations in the transaction of their write.
@Suite struct RepositoryOutboxTests {
    private static func message(_ kind: String) -> OutboxMessage {
        OutboxMessage(kind: kind, payload: Data(#"{"kind":"\#(kind)"}"#), orderingKey: "books")
    }

    @Test(arguments: StoreKind.allCases)
    func `a save, a delete and a replacement each enqueue their operation with the change`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"), enqueue: [Self.message("book.save")])
            try await books.save([Book(id: "b", title: "B")], enqueue: [Self.message("book.save-many")])
            try await books.delete("a", enqueue: [Self.message("book.delete")])
            try await books.replaceAll(with: [Book(id: "c", title: "C")], enqueue: [Self.message("book.replace")])
            #expect(try await store.outbox.pending().map(\.kind) == ["book.save", "book.save-many", "book.delete", "book.replace"])
            #expect(try await store.read("books")?.keys.sorted() == ["c"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a failed commit stores neither the item nor its operation`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) {
                try await books.save(Book(id: "a", title: "A"), enqueue: [Self.message("book.save")])
            }
            #expect(try await store.read("books")?["a"] == nil)
            #expect(try await store.outbox.pending().isEmpty)
            try await books.save(Book(id: "a", title: "A"), enqueue: [Self.message("book.save")])
            #expect(try await store.outbox.pending().count == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflicting save or delete enqueues nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let mine = try await staleRepository(on: store)
            await #expect(throws: RecordConflict.self) {
                try await mine.save(Book(id: "a", title: "mine"), enqueue: [Self.message("book.save")])
            }
            await #expect(throws: RecordConflict.self) {
                try await mine.delete("a", enqueue: [Self.message("book.delete")])
            }
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a bad message refuses the whole save before anything is written`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let books = RecordRepository<Book>(store: store, collection: "books")
            let error = await #expect(throws: RecordStoreError.self) {
                try await books.save(Book(id: "a", title: "A"), enqueue: [OutboxMessage(kind: "", payload: Data())])
            }
            #expect(error?.code == .invalidArgument)
            #expect(try await store.read("books")?["a"] == nil)
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a document save enqueues its operation with the records it writes`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            var document = ReadingProgress(positions: ["moby-dick": .init(chapter: 1, offset: 0)])
            try await progress.save(document, enqueue: [Self.message("progress.seed")])
            document.positions["moby-dick"] = .init(chapter: 2, offset: 10)
            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) {
                try await progress.save(document, enqueue: [Self.message("progress.lost")])
            }
            try await progress.save(document, enqueue: [Self.message("progress.save")])
            #expect(try await store.outbox.pending().map(\.kind) == ["progress.seed", "progress.save"])
            #expect(try await store.value("progress", key: "positions/moby-dick") == Data(#"{"chapter":2,"offset":10}"#))
        }
    }
}
