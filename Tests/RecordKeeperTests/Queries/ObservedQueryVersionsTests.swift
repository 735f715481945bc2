import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// What an observed query teaches its repository: the versions of items it knew nothing of (so
/// a screen can save what it shows), never a newer version of an item it knows (so a save based
/// on a copy read before another writer's change still conflicts with it).
@Suite struct ObservedQueryVersionsTests {
    typealias Word = ItemQueryTests.Word

    @Test(arguments: StoreKind.allCases)
    func `an observed query never moves on a known version, so a save of an older copy conflicts`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let screen = RecordRepository<Word>(store: store, collection: "words")
            try await screen.save(ItemQueryTests.words())
            var stale = try #require(try await screen.item("w2"))  // version 1, edited on the screen
            stale.text = "edited on the screen"

            let other = RecordRepository<Word>(store: store, collection: "words")
            var theirs = try #require(try await other.item("w2"))
            theirs.text = "edited by another writer"
            try await other.save(theirs)

            // The stream shows the other writer's change, twice (now, and after a later commit).
            var shown = await screen.observe(where: Word.level == 2, orderBy: [Word.dueAt.ascending]).makeAsyncIterator()
            #expect(try await shown.next()?.first { $0.id == "w2" }?.text == "edited by another writer")
            var later = try #require(try await other.item("w5"))
            later.text = "a later change"
            try await other.save(later)
            #expect(try await shown.next()?.first { $0.id == "w5" }?.text == "a later change")

            let conflict = await #expect(throws: RecordConflict.self) { try await screen.save(stale) }
            #expect(conflict?.keys == ["w2"])
            #expect(try await other.item("w2")?.text == "edited by another writer")

            // Read again, the screen bases its save on what it read.
            var fresh = try #require(try await screen.item("w2"))
            fresh.text = "merged"
            try await screen.save(fresh)
            #expect(try await other.item("w2")?.text == "merged")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an observed query teaches the version of an item its repository never saw, so it can be saved`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Word>(store: store, collection: "words").save(ItemQueryTests.words())
            let screen = RecordRepository<Word>(store: store, collection: "words")
            var shown = await screen.observe(where: Word.level == 2, orderBy: [Word.dueAt.ascending]).makeAsyncIterator()
            var word = try #require(try await shown.next()?.first)
            word.text = "edited from the list"
            try await screen.save(word)
            #expect(try await RecordRepository<Word>(store: store, collection: "words").item(word.id) == word)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a query, unlike an observed one, bases later saves on what it read`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let screen = RecordRepository<Word>(store: store, collection: "words")
            try await screen.save(ItemQueryTests.words())
            var stale = try #require(try await screen.item("w2"))
            let other = RecordRepository<Word>(store: store, collection: "words")
            var theirs = try #require(try await other.item("w2"))
            theirs.text = "edited by another writer"
            try await other.save(theirs)

            // An explicit read: documented to make what it returned the base of later saves.
            _ = try await screen.query(where: Word.level == 2)
            stale.text = "saved over it, as asked"
            try await screen.save(stale)
            #expect(try await other.item("w2")?.text == "saved over it, as asked")
        }
    }
}
