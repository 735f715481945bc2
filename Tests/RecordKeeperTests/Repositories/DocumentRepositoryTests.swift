import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

@Suite struct DocumentRepositoryTests {
    private typealias Position = ReadingProgress.Position
    private typealias Word = ReadingProgress.Word

    private static let sample = ReadingProgress(
        positions: ["moby-dick": Position(chapter: 3, offset: 120), "quijote": Position(chapter: 1, offset: 0)],
        vocabulary: ["ballena": Word(translation: "whale")])

    @Test(arguments: StoreKind.allCases)
    func `a missing document loads as nil`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            let loaded = try await progress.load()
            #expect(loaded == nil)
            try await store.put("progress", key: "notes/today", data: Data("\"someone else's\""))
            #expect(try await progress.load() == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the first save seeds the collection with one record per entry and the schema`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            try await progress.save(Self.sample)
            let stored = try #require(try await store.read("progress"))
            #expect(stored.keys.sorted() == ["_schema", "positions/moby-dick", "positions/quijote", "vocabulary/ballena"])
            #expect(stored["_schema"] == Data("1"))
            #expect(stored["positions/moby-dick"] == Data(#"{"chapter":3,"offset":120}"#))
            let other = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            #expect(try await other.load() == Self.sample)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `later saves apply only the difference from the last confirmed document`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            try await progress.save(Self.sample)
            let before = try await RecordVersion.all(in: store, "progress")
            var changes = await store.changes(in: "progress").makeAsyncIterator()

            var next = Self.sample
            next.positions["moby-dick"]?.offset = 480
            next.vocabulary["ballena"] = nil
            next.vocabulary["arpón"] = Word(translation: "harpoon")
            try await progress.save(next)
            #expect(await changes.next() == RecordChanges(
                upserts: [
                    "positions/moby-dick": Data(#"{"chapter":3,"offset":480}"#),
                    "vocabulary/arpón": Data(#"{"reviews":0,"translation":"harpoon"}"#),
                ],
                removals: ["vocabulary/ballena"]))
            try await progress.save(next)  // unchanged: writes nothing
            next.vocabulary["arpón"]?.reviews = 1
            try await progress.save(next)
            #expect(await changes.next() == RecordChanges(upserts: ["vocabulary/arpón": Data(#"{"reviews":1,"translation":"harpoon"}"#)]))
            let after = try await RecordVersion.all(in: store, "progress")
            #expect(after["positions/quijote"] == before["positions/quijote"])
            #expect(after["_schema"] == before["_schema"])
            #expect(try await DocumentRepository<ReadingProgress>(store: store, collection: "progress").load() == next)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `records written by someone else survive its saves`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            // Someone else's record exists before the first save, and more arrive later.
            try await store.put("progress", key: "activity/2026-11-29", data: Data("3"))
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            #expect(try await progress.load() == nil)
            try await progress.save(Self.sample)
            try await store.put("progress", key: "positions/hamlet", data: Data(#"{"chapter":2,"offset":9}"#))
            try await store.put("progress", key: "settings", data: Data("{}"))

            var next = Self.sample
            next.positions = ["moby-dick": Position(chapter: 4, offset: 0)]
            try await progress.save(next)

            let stored = try #require(try await store.read("progress"))
            #expect(stored.keys.sorted() == [
                "_schema", "activity/2026-11-29", "positions/hamlet", "positions/moby-dick", "settings", "vocabulary/ballena",
            ])
            #expect(stored["activity/2026-11-29"] == Data("3"))
            // Another writer's entry in a group the document owns is part of the document on the next load.
            #expect(try await progress.load()?.positions.keys.sorted() == ["hamlet", "moby-dick"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an unsupported stored schema version is refused and nothing is written`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("progress", values: ["_schema": Data("7"), "positions/x": Data("{}")])
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            let error = await #expect(throws: RepositoryError.self) { try await progress.load() }
            #expect(error?.code == .unsupportedSchemaVersion)
            #expect(error?.schemaVersion == 7)
            #expect(error?.supportedSchemaVersions == 1...2)
            #expect(error?.localizedDescription.contains("schema version 7 is not supported") == true)

            await #expect(throws: RepositoryError.self) { try await progress.save(Self.sample) }
            #expect(try await store.read("progress") == ["_schema": Data("7"), "positions/x": Data("{}")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an unsupported schema version in the value is refused`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            var future = Self.sample
            future.schemaVersion = 3
            let error = await #expect(throws: RepositoryError.self) { try await progress.save(future) }
            #expect(error?.code == .unsupportedSchemaVersion)
            #expect(error?.schemaVersion == 3)
            let stored = try await store.read("progress")
            #expect(stored == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a document upgraded by someone else beyond support is never written into`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            try await progress.save(Self.sample)
            try await store.put("progress", key: "_schema", data: Data("9"))
            var next = Self.sample
            next.positions["quijote"]?.chapter = 2
            for policy in [ConflictPolicy.fail, .overwrite] {
                let error = await #expect(throws: RepositoryError.self) { try await progress.save(next, onConflict: policy) }
                #expect(error?.code == .unsupportedSchemaVersion)
            }
            #expect(try await store.value("progress", key: "positions/quijote") == Data(#"{"chapter":1,"offset":0}"#))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a supported newer schema version is written as a difference`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            try await progress.save(Self.sample)
            var changes = await store.changes(in: "progress").makeAsyncIterator()
            var upgraded = Self.sample
            upgraded.schemaVersion = 2
            try await progress.save(upgraded)
            #expect(await changes.next() == RecordChanges(upserts: ["_schema": Data("2")]))
            #expect(try await progress.load()?.schemaVersion == 2)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a record that does not decode fails the load, naming its key`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            try await progress.save(Self.sample)
            try await store.put("progress", key: "vocabulary/ballena", data: Data(#"{"translation":false}"#))
            let error = await #expect(throws: RepositoryError.self) { try await progress.load() }
            #expect(error?.code == .undecodableRecord)
            #expect(error?.collection == "progress")
            #expect(error?.key == "vocabulary/ballena")
            #expect(error?.underlying is DecodingError)
        }
    }

    @Test(arguments: StoreKind.allCases, WriterOrder.allCases)
    func `two repositories changing the same entry: one succeeds, the other conflicts`(
        kind: StoreKind, order: WriterOrder
    ) async throws {
        try await withStore(kind) { store, _ in
            try await DocumentRepository<ReadingProgress>(store: store, collection: "progress").save(Self.sample)
            let first = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            let second = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            var a = try #require(try await first.load())
            var b = try #require(try await second.load())
            a.positions["moby-dick"]?.offset = 1
            b.positions["moby-dick"]?.offset = 2
            let (winner, winning, loser, losing) = order == .firstThenSecond ? (first, a, second, b) : (second, b, first, a)

            try await winner.save(winning)
            let conflict = await #expect(throws: RecordConflict.self) { try await loser.save(losing) }
            #expect(conflict?.keys == ["positions/moby-dick"])
            #expect(try await loser.load() == winning)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `two repositories changing different entries do not conflict`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await DocumentRepository<ReadingProgress>(store: store, collection: "progress").save(Self.sample)
            let first = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            let second = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            var a = try #require(try await first.load())
            var b = try #require(try await second.load())
            a.positions["moby-dick"]?.offset = 1
            b.vocabulary["ola"] = Word(translation: "wave")
            try await first.save(a)
            try await second.save(b)
            let merged = try #require(try await first.load())
            #expect(merged.positions["moby-dick"]?.offset == 1)
            #expect(merged.vocabulary.keys.sorted() == ["ballena", "ola"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `two first saves: one seeds, the other conflicts`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let first = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            let second = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            #expect(try await first.load() == nil)
            #expect(try await second.load() == nil)
            try await first.save(Self.sample)
            let conflict = await #expect(throws: RecordConflict.self) {
                try await second.save(ReadingProgress(vocabulary: ["ola": Word(translation: "wave")]))
            }
            #expect(conflict?.keys.contains("_schema") == true)
            #expect(try await second.load() == Self.sample)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a save before any load conflicts with a stored document and erases none of it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await DocumentRepository<ReadingProgress>(store: store, collection: "progress").save(Self.sample)
            let before = try await store.read("progress")
            // Another screen, which never loaded, saves a document of its own.
            let unseeing = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            let conflict = await #expect(throws: RecordConflict.self) {
                try await unseeing.save(ReadingProgress(vocabulary: ["ola": Word(translation: "wave")]))
            }
            #expect(conflict?.keys.contains("_schema") == true)
            #expect(conflict?.localizedDescription.contains("\"_schema\" already exists") == true)
            #expect(try await store.read("progress") == before)
            // Loaded, the same save applies its difference from what is stored.
            var loaded = try #require(try await unseeing.load())
            loaded.vocabulary["ola"] = Word(translation: "wave")
            try await unseeing.save(loaded)
            #expect(try await unseeing.load() == loaded)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an overwriting save before any load replaces the stored document`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await DocumentRepository<ReadingProgress>(store: store, collection: "progress").save(Self.sample)
            let replacement = ReadingProgress(vocabulary: ["ola": Word(translation: "wave")])
            let blind = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            try await blind.save(replacement, onConflict: .overwrite)
            #expect(try await DocumentRepository<ReadingProgress>(store: store, collection: "progress").load() == replacement)
        }
    }

    @Test func `document keys are checked`() throws {
        var records = DocumentRecords(collection: "progress", schemaVersion: 1)
        #expect(throws: RepositoryError.self) { try records.encode(["a": 1], inGroup: "_private") }
        #expect(throws: RepositoryError.self) { try records.encode(["a": 1], inGroup: "a/b") }
        #expect(throws: RepositoryError.self) { try records.encode(["": 1], inGroup: "numbers") }
        #expect(throws: RepositoryError.self) { try records.encode(1, forKey: "") }
        try records.encode(["a/b": 1], inGroup: "numbers")
        try records.encode(true, forKey: "flag")
        #expect(try records.decode(Int.self, inGroup: "numbers") == ["a/b": 1])
        #expect(try records.decode(Bool.self, forKey: "flag") == true)
        #expect(try records.decode(Bool.self, forKey: "missing") == nil)
    }
    @Test(arguments: StoreKind.allCases)
    func `overwriting a document writes its changed records whatever others saved`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await DocumentRepository<ReadingProgress>(store: store, collection: "progress").save(Self.sample)
            let first = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            let second = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            var a = try #require(try await first.load())
            var b = try #require(try await second.load())
            a.positions["moby-dick"]?.offset = 1
            a.vocabulary["ola"] = Word(translation: "wave")
            b.positions["moby-dick"]?.offset = 2
            try await first.save(a)
            try await second.save(b, onConflict: .overwrite)
            let stored = try #require(try await first.load())
            #expect(stored.positions["moby-dick"]?.offset == 2)
            // Last writer wins per record: the first writer's other record stays.
            #expect(stored.vocabulary["ola"] == Word(translation: "wave"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the document change stream yields the document after each commit`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            var changes = await progress.changes().makeAsyncIterator()
            // Each element is read after its commit, so take it before the next write.
            try await progress.save(Self.sample)
            #expect(try await changes.next() == .some(Self.sample))
            var advanced = Self.sample
            advanced.positions["moby-dick"] = Position(chapter: 4, offset: 0)
            try await progress.save(advanced)
            #expect(try await changes.next() == .some(advanced))
            try await store.removeCollection("progress")
            #expect(try await changes.next() == .some(nil))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a document that cannot be rebuilt ends its change stream with an error`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let progress = DocumentRepository<ReadingProgress>(store: store, collection: "progress")
            try await progress.save(Self.sample)
            var changes = await progress.changes().makeAsyncIterator()
            try await store.put("progress", key: "positions/moby-dick", data: Data("not json"))
            await #expect(throws: RepositoryError.self) { try await changes.next() }
            #expect(try await changes.next() == nil)
        }
    }
}
