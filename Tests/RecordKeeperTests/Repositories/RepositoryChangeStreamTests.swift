import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

@Suite struct RepositoryChangeStreamTests {
    @Test(arguments: StoreKind.allCases)
    func `typed changes arrive once per commit, in commit order, to a consumer that keeps up`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            var changes = await books.changes().makeAsyncIterator()

            try await books.save([Book(id: "b", title: "B"), Book(id: "a", title: "A")])
            #expect(try await changes.next() == RepositoryChange(upserted: [Book(id: "a", title: "A"), Book(id: "b", title: "B")]))
            try await store.put("other", key: "a", data: Data("ignored"))
            try await books.save([Book(id: "a", title: "A"), Book(id: "c", title: "C")])
            // The unchanged "a" is left out.
            #expect(try await changes.next() == RepositoryChange(upserted: [Book(id: "c", title: "C")]))
            try await books.delete("b")
            #expect(try await changes.next() == RepositoryChange(removed: ["b"]))
            try await books.replaceAll(with: [Book(id: "d", title: "D")])
            #expect(try await changes.next() == RepositoryChange(upserted: [Book(id: "d", title: "D")], removed: ["a", "c"]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the stream is silent on conflicts, failed commits and unchanged saves`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            let stranger = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            var changes = await books.changes().makeAsyncIterator()

            await #expect(throws: RecordConflict.self) { try await stranger.save(Book(id: "a", title: "mine")) }
            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) { try await books.save(Book(id: "b", title: "B")) }
            try await books.save(Book(id: "a", title: "A"))
            try await books.save([])
            try await books.save(Book(id: "c", title: "C"))

            #expect(try await changes.next() == RepositoryChange(upserted: [Book(id: "c", title: "C")]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `changes made by other repositories and by the store arrive too`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Chapter>(store: store, collection: "chapters")
            var changes = await books.changes().makeAsyncIterator()
            try await RecordRepository<Chapter>(store: store, collection: "chapters").save(Chapter(id: 2, title: "Two"))
            #expect(try await changes.next() == RepositoryChange(upserted: [Chapter(id: 2, title: "Two")]))
            try await store.removeCollection("chapters")
            #expect(try await changes.next() == RepositoryChange(removed: [2]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a changed record that does not decode ends the stream with an error naming its key`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            var changes = await books.changes().makeAsyncIterator()
            try await books.save(Book(id: "a", title: "A"))
            #expect(try await changes.next() == RepositoryChange(upserted: [Book(id: "a", title: "A")]))
            try await store.put("books", key: "broken", data: Data("not json"))
            try await books.save(Book(id: "z", title: "Z"))

            let error = await #expect(throws: RepositoryError.self) { try await changes.next() }
            #expect(error?.code == .undecodableRecord)
            #expect(error?.collection == "books")
            #expect(error?.key == "broken")
            // The stream ended: it never skips the bad record to deliver later ones.
            #expect(try await changes.next() == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a removed key that is no item ID ends the stream with an error`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let chapters = RecordRepository<Chapter>(store: store, collection: "chapters")
            try await store.put("chapters", key: "intro", data: Data("{}"))
            var changes = await chapters.changes().makeAsyncIterator()
            var removal = RecordChanges()
            removal["intro"] = nil
            try await store.apply("chapters", changes: removal)
            let error = await #expect(throws: RepositoryError.self) { try await changes.next() }
            #expect(error?.code == .keyMismatch)
            #expect(error?.key == "intro")
        }
    }

    // The time limit turns a stream that never stops observing into a failure.
    @Test(.timeLimit(.minutes(3)), arguments: StoreKind.allCases)
    func `a stream the consumer drops stops observing the store`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            do {
                var changes = await books.changes().makeAsyncIterator()
                try await books.save(Book(id: "a", title: "A"))
                #expect(try await changes.next()?.upserted.map(\.id) == ["a"])
            }
            // Dropping the iterator cancels the forwarding task, which ends the store's stream
            // (in its own time: the handshake is the count reaching zero).
            try await waitUntil { store.observerCount("books") == 0 }
            #expect(store.observerCount("books") == 0)
        }
    }
}
