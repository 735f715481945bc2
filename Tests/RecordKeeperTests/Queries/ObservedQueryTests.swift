import Foundation
import RecordKeeper
import TestHelpers
import Testing

@Suite struct ObservedQueryTests {
    static let high = RecordQuery(where: RecordField("score") >= 10, orderBy: [RecordField("score").descending], limit: 3)

    static func json(_ score: Int) -> Data { Data(#"{"score":\#(score)}"#.utf8) }

    @Test(arguments: StoreKind.allCases)
    func `an observed query yields now and again only when its result changed`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("scores", key: "a", data: Self.json(12))
            let stream = await store.observe("scores", Self.high)
            var pages = stream.makeAsyncIterator()
            #expect(try await pages.next()?.elements.map(\.key) == ["a"])
            // Not in the result: a commit that leaves it unchanged yields nothing; the next one
            // that changes it yields (the first element after the unchanged one is that change).
            try await store.put("scores", key: "low", data: Self.json(1))
            try await store.put("scores", key: "b", data: Self.json(20))
            #expect(try await pages.next()?.elements.map(\.key) == ["b", "a"])
            _ = try await store.delete("scores", key: "a")
            #expect(try await pages.next()?.elements.map(\.key) == ["b"])
        }
    }

    @Test func `an observed query hears another store on the file`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("scores", key: "a", data: Self.json(12))
            var pages = await store.observe("scores", Self.high).makeAsyncIterator()
            #expect(try await pages.next()?.elements.map(\.key) == ["a"])
            let other = RecordStore(url: url)
            try await other.put("scores", key: "b", data: Self.json(30))
            #expect(try await pages.next()?.elements.map(\.key) == ["b", "a"])
            await other.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an observed query hears a sync pull`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let server = InMemorySyncServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "alice", collections: ["scores"])
            try await store.put("scores", key: "a", data: Self.json(12))
            _ = try await sync.sync()
            var pages = await store.observe("scores", Self.high).makeAsyncIterator()
            #expect(try await pages.next()?.elements.map(\.key) == ["a"])
            let device = RecordSync(store: RecordStore.inMemory(), server: server)
            try await device.start(space: "alice", collections: ["scores"])
            try await device.store.put("scores", key: "remote", data: Self.json(50))
            _ = try await device.sync()
            _ = try await sync.pull()
            #expect(try await pages.next()?.elements.map(\.key) == ["remote", "a"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an observed typed query yields decoded items`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let words = RecordRepository<ItemQueryTests.Word>(store: store, collection: "words")
            try await words.save(ItemQueryTests.words())
            var due = await words.observe(where: ItemQueryTests.Word.level == 2, orderBy: [ItemQueryTests.Word.dueAt.ascending])
                .makeAsyncIterator()
            #expect(try await due.next()?.map(\.id) == ["w2", "w5"])
            var word = try #require(try await words.item("w0"))
            word.level = 2
            try await words.save(word)
            #expect(try await due.next()?.map(\.id) == ["w0", "w2", "w5"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an observed query that cannot run ends with its error`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var pages = await store.observe("scores", RecordQuery(limit: -1)).makeAsyncIterator()
            await #expect(throws: QueryError.self) { _ = try await pages.next() }
        }
    }
}
