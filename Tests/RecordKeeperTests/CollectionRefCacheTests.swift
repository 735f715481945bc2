import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// A connection keeps the collections it looked up (`CollectionRefCache`) while the store's
/// data version says nothing changed. These tests change the collections table under it —
/// through another store on the same file, in its own transactions, and in a transaction that
/// rolls back — in ways that reuse or move ids, and check that no read or write goes to a
/// collection id that is no longer the name's.
@Suite struct CollectionRefCacheTests {
    struct Rollback: Error {}

    @Test
    func `a collection removed and established again by another store is read and written at its new id`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let first = RecordStore(url: url)
            let second = RecordStore(url: url)
            try await first.put("a", key: "old", data: Data("1"))
            // The first store now knows "a" on its writer and on its reader.
            #expect(try await first.value("a", key: "old") == Data("1"))

            try await second.put("b", key: "x", data: Data("b"))
            try await second.removeCollection("a")
            try await second.put("a", key: "new", data: Data("2"))

            #expect(try await first.value("a", key: "old") == nil)
            #expect(try await first.value("a", key: "new") == Data("2"))
            try await first.put("a", key: "third", data: Data("3"))
            #expect(try await second.read("a") == ["new": Data("2"), "third": Data("3")])
            #expect(try await second.read("b") == ["x": Data("b")])
            await first.close()
            await second.close()
        }
    }

    @Test
    func `a record and its version are read at the collection's new id after another store established it again`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let first = RecordStore(url: url)
            let second = RecordStore(url: url)
            try await first.put("a", key: "old", data: Data("1"))
            // `record` (payload and version) and `value` (payload only) share the cache.
            #expect(try await first.record("a", key: "old")?.data == Data("1"))

            try await second.put("b", key: "x", data: Data("b"))
            try await second.removeCollection("a")
            try await second.put("a", key: "new", data: Data("2"))
            let stored = try #require(try await second.record("a", key: "new"))

            #expect(try await first.record("a", key: "old") == nil)
            #expect(try await first.record("a", key: "new") == stored)
            #expect(try await first.value("a", key: "new") == Data("2"))
            #expect(try await first.record("b", key: "x")?.data == Data("b"))
            await first.close()
            await second.close()
        }
    }

    @Test
    func `an id freed by another store and given to another collection is not written through the old name`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let first = RecordStore(url: url)
            let second = RecordStore(url: url)
            try await first.put("keep", key: "k", data: Data("k"))
            try await first.put("gone", key: "g", data: Data("g"))
            #expect(try await first.value("gone", key: "g") == Data("g"))

            // "gone" had the largest id; removing it frees that id for the next collection.
            try await second.removeCollection("gone")
            try await second.put("other", key: "o", data: Data("o"))

            #expect(try await first.value("gone", key: "o") == nil)
            #expect(try await first.value("gone", key: "g") == nil)
            try await first.put("gone", key: "again", data: Data("again"))
            #expect(try await second.read("other") == ["o": Data("o")])
            #expect(try await second.read("gone") == ["again": Data("again")])
            await first.close()
            await second.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a collection established in a rolled back transaction is established again by the next write`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("first", key: "k", data: Data("1"))
            await #expect(throws: Rollback.self) {
                try await store.write { transaction in
                    try transaction.put("rolledBack", key: "k", data: Data("lost"))
                    #expect(try transaction.value("rolledBack", key: "k") == Data("lost"))
                    throw Rollback()
                }
            }
            // The id the rolled-back collection had goes to the next collection established.
            try await store.put("next", key: "n", data: Data("n"))
            #expect(try await store.value("rolledBack", key: "k") == nil)
            #expect(try await store.value("rolledBack", key: "n") == nil)
            try await store.put("rolledBack", key: "k", data: Data("kept"))
            #expect(try await store.read("next") == ["n": Data("n")])
            #expect(try await store.read("rolledBack") == ["k": Data("kept")])
            #expect(try await store.collections().map(\.name) == ["first", "next", "rolledBack"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a collection removed and written again in one transaction reads at its new id afterwards`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("a", key: "old", data: Data("1"))
            try await store.put("b", key: "b", data: Data("b"))
            #expect(try await store.value("a", key: "old") == Data("1"))
            try await store.write { transaction in
                try transaction.removeCollection("a")
                #expect(try transaction.value("a", key: "old") == nil)
                try transaction.put("a", key: "new", data: Data("2"))
                #expect(try transaction.value("a", key: "new") == Data("2"))
            }
            #expect(try await store.value("a", key: "old") == nil)
            #expect(try await store.value("a", key: "new") == Data("2"))
            try await store.put("a", key: "more", data: Data("3"))
            #expect(try await store.read("a") == ["new": Data("2"), "more": Data("3")])
            #expect(try await store.read("b") == ["b": Data("b")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a removed collection reads as absent, not as the collection that takes its id`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("first", key: "f", data: Data("f"))
            try await store.put("a", key: "k", data: Data("1"))
            #expect(try await store.value("a", key: "k") == Data("1"))
            try await store.removeCollection("a")
            // "a" had the largest id: the next collection gets it, with the same key.
            try await store.put("b", key: "k", data: Data("b"))
            #expect(try await store.value("a", key: "k") == nil)
            #expect(try await store.record("a", key: "k") == nil)
            #expect(try await store.value("b", key: "k") == Data("b"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a collection established before SQLite rolled its transaction back lends its id to nobody`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("a", key: "k", data: Data("1"))
            try await store.setMaxPageCountForTesting(try await store.info().pageCount + 2)
            let big = Data(repeating: 7, count: 256 * 1024)
            await #expect(throws: RecordStoreError.self) {
                try await store.write { transaction in
                    try transaction.put("fresh", key: "x", data: Data("x"))
                    #expect(throws: RecordStoreError.self) { try transaction.put("a", key: "big", data: big) }
                    try transaction.put("fresh", key: "y", data: Data("y"))
                }
            }
            try await store.setMaxPageCountForTesting(1_000_000)
            // The id "fresh" had in the rolled-back transaction goes to the next collection.
            try await store.put("other", key: "o", data: Data("o"))
            #expect(try await store.read("other") == ["o": Data("o")])
            #expect(try await store.read("fresh") == nil)
            try await store.put("fresh", key: "z", data: Data("z"))
            #expect(try await store.read("fresh") == ["z": Data("z")])
            #expect(try await store.read("other") == ["o": Data("o")])
        }
    }

    @Test
    func `the cache keeps every collection noted, beyond the first, up to its capacity`() {
        let cache = CollectionRefCache()
        for id in 1...Int64(CollectionRefCache.capacity) { cache.note(id: id, for: "c\(id)", at: 3) }
        for id in 1...Int64(CollectionRefCache.capacity) { #expect(cache.candidate("c\(id)")?.id == id) }
        // A name noted again with another id replaces its entry.
        cache.note(id: 99, for: "c2", at: 3)
        #expect(cache.candidate("c2")?.id == 99)
        #expect(cache.candidate("c1")?.id == 1)
        // Past the capacity the others are dropped (looked up again), never mixed up.
        cache.note(id: 500, for: "new", at: 3)
        #expect(cache.candidate("new")?.id == 500)
        #expect(cache.candidate("c3") == nil)
        #expect(cache.candidate("c1")?.id == 1)
    }

    @Test
    func `the cache keeps an entry only at the data version it was noted at`() {
        let cache = CollectionRefCache()
        let ref = CollectionRef(id: 1, synced: false)
        cache.note(id: 1, for: "a", at: 7)
        // Noted by a read, without the sync flag: a write looks the collection up itself.
        cache.beganWrite(at: 7)
        #expect(cache.candidate("a")?.id == 1)
        #expect(cache.refInWrite("a") == nil)
        cache.rolledBack()
        cache.note(id: 1, for: "a", at: 7)
        #expect(cache.candidate("a")?.atVersion == 7)
        // A write transaction that begins at another version drops it.
        cache.beganWrite(at: 8)
        #expect(cache.refInWrite("a") == nil)
        cache.noteInWrite(ref, for: "a")
        cache.committed(at: 9)
        #expect(cache.candidate("a")?.atVersion == 9)
        // One that begins at the stamped version keeps it; a rollback drops everything.
        cache.beganWrite(at: 9)
        #expect(cache.refInWrite("a") == ref)
        cache.rolledBack()
        #expect(cache.candidate("a") == nil)
        // A change to the collections table inside a transaction drops what it noted.
        cache.beganWrite(at: 9)
        cache.noteInWrite(ref, for: "a")
        cache.invalidate()
        #expect(cache.refInWrite("a") == nil)
        // Without a version, nothing is kept.
        cache.beganWrite(at: 9)
        cache.noteInWrite(ref, for: "a")
        cache.committed(at: nil)
        #expect(cache.candidate("a") == nil)
        cache.note(id: 1, for: "a", at: nil)
        #expect(cache.candidate("a") == nil)
    }
}
