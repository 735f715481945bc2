import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Item versions: a repository brings older stored items forward in one transaction, all or
/// nothing, and refuses items written by a newer app.
@Suite struct ItemMigrationTests {
    typealias BookV1 = ReadingApp.BookV1
    typealias BookV2 = ReadingApp.BookV2

    struct StepFailure: Error, Equatable {}

    /// Copies a committed fixture into `directory`.
    private func fixtureCopy(_ name: String, into directory: URL) throws -> URL {
        let source = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        let destination = directory.appendingPathComponent(name)
        try FileManager.default.copyItem(at: source, to: destination)
        return destination
    }

    /// The bytes of a store file and its log (nil when absent), after closing the store.
    private func fileState(_ url: URL) throws -> [Data?] {
        try ["", "-wal"].map { suffix in
            let path = url.path + suffix
            return FileManager.default.fileExists(atPath: path) ? try Data(contentsOf: URL(fileURLWithPath: path)) : nil
        }
    }

    private func version2(_ store: RecordStore, steps: [ItemMigrationStep] = [ReadingApp.stepFrom1]) -> RecordRepository<BookV2> {
        RecordRepository<BookV2>(store: store, collection: "books", itemVersion: 2, migrations: steps)
    }

    // MARK: The version 1 app's store

    @Test func `a store written by version 1 of the app opens in version 2 with every item migrated`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("app-v1-books.sqlite", into: directory)
            let store = RecordStore(url: url)
            #expect(try await store.itemVersion(of: "books") == 1)

            let books = version2(store)
            #expect(try await books.load() == ReadingApp.migratedBooks)
            #expect(try await store.itemVersion(of: "books") == 2)
            // Stored in the form version 2 itself writes, so saving unchanged rewrites nothing.
            let stored = try #require(try await store.value("books", key: "dune"))
            #expect(stored == (try RecordCoding.encode(ReadingApp.migratedBooks[0])))
            let version = try #require(try await store.record("books", key: "dune")).version
            try await books.save(ReadingApp.migratedBooks[0])
            #expect(try await store.record("books", key: "dune")?.version == version)
            // Unrelated data is untouched.
            #expect(try await store.read("notes") == ["today": Data(#"{"text":"Read chapter 3"}"#.utf8)])
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a failing step names the key and the step and leaves the store byte-for-byte as it was`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("app-v1-books.sqlite", into: directory)
            // Bring the copy to the current format first (the first write transaction
            // migrates it, a change of its own), so the comparison is about the failing step.
            let opener = RecordStore(url: url)
            try await opener.write { _ in }
            await opener.close()
            let before = try fileState(url)
            let store = RecordStore(url: url)
            let failing = ItemMigrationStep.json(from: 1) { book in
                if book["id"] as? String == "moby-dick" { throw StepFailure() }
                book["authors"] = [book["author"] ?? ""]
                book["rating"] = 0
            }
            let books = version2(store, steps: [failing])
            let error = await #expect(throws: RepositoryError.self) { try await books.load() }
            #expect(error?.code == .migrationFailed)
            #expect(error?.key == "moby-dick")
            #expect(error?.itemVersion == 1)
            #expect(error?.detail?.contains("from item version 1 to 2") == true)
            #expect(error?.underlying is StepFailure)
            // A save is refused the same way, and writes nothing either.
            await #expect(throws: RepositoryError.self) {
                try await books.save(BookV2(id: "new", title: "New", authors: [], rating: 1))
            }
            #expect(try await store.itemVersion(of: "books") == 1)
            await store.close()
            #expect(try fileState(url) == before)

            // The app ships a fix and tries again.
            let fixed = version2(RecordStore(url: url))
            #expect(try await fixed.load() == ReadingApp.migratedBooks)
        }
    }

    // MARK: All or nothing

    @Test(arguments: StoreKind.allCases)
    func `a migrated item that does not decode fails the migration and nothing changes`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<BookV1>(store: store, collection: "books").save(ReadingApp.version1Books)
            let before = try await store.allRecords("books")
            let forgetful = ItemMigrationStep.json(from: 1) { book in
                book["authors"] = [book["author"] ?? ""]  // but no rating
            }
            let error = await #expect(throws: RepositoryError.self) { try await version2(store, steps: [forgetful]).load() }
            #expect(error?.code == .migrationFailed)
            #expect(error?.key == "dune", "the first item in key order")
            #expect(error?.underlying is DecodingError)
            #expect(try await store.allRecords("books") == before)
            #expect(try await store.itemVersion(of: "books") == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a missing step is refused and nothing changes`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<BookV1>(store: store, collection: "books").save(ReadingApp.version1Books)
            let before = try await store.allRecords("books")
            let error = await #expect(throws: RepositoryError.self) { try await version2(store, steps: []).load() }
            #expect(error?.code == .missingMigrationStep)
            #expect(error?.detail?.contains("from item version 1 to 2") == true)
            #expect(try await store.allRecords("books") == before)
        }
    }

    // MARK: Newer versions

    @Test(arguments: StoreKind.allCases)
    func `a collection written by a newer app is refused and left untouched`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let newer = version2(store)
            try await newer.save(ReadingApp.migratedBooks)
            let before = try await store.allRecords("books")

            let older = RecordRepository<BookV1>(store: store, collection: "books")
            let error = await #expect(throws: RepositoryError.self) { try await older.load() }
            #expect(error?.code == .newerItemVersion)
            #expect(error?.itemVersion == 2)
            await #expect(throws: RepositoryError.self) { try await older.item("dune") }
            await #expect(throws: RepositoryError.self) { try await older.save(ReadingApp.version1Books[0], onConflict: .overwrite) }
            await #expect(throws: RepositoryError.self) { try await older.delete("dune", onConflict: .overwrite) }
            await #expect(throws: RepositoryError.self) { try await older.replaceAll(with: [], onConflict: .overwrite) }
            #expect(try await store.allRecords("books") == before)
            #expect(try await store.itemVersion(of: "books") == 2)
        }
    }

    @Test func `a newer collection is refused with the file byte-for-byte unchanged`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await version2(store).save(ReadingApp.migratedBooks)
            await store.close()
            let before = try fileState(url)
            let older = RecordRepository<BookV1>(store: store, collection: "books")
            await #expect(throws: RepositoryError.self) { try await older.load() }
            await #expect(throws: RepositoryError.self) { try await older.save(ReadingApp.version1Books[0], onConflict: .overwrite) }
            await store.close()
            #expect(try fileState(url) == before)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the change stream of an older repository ends with newerItemVersion once a newer app migrated the items`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let older = RecordRepository<BookV1>(store: store, collection: "books")
            try await older.save(ReadingApp.version1Books)
            var changes = await older.changes().makeAsyncIterator()
            try await older.save(BookV1(id: "emma", title: "Emma", author: "Jane Austen"))
            #expect(try await changes.next()?.upserted.map(\.id) == ["emma"])
            // A newer app migrates the collection: its items are of version 2 from now on.
            _ = try await version2(store).load()
            let error = await #expect(throws: RepositoryError.self) { _ = try await changes.next() }
            #expect(error?.code == .newerItemVersion)
            #expect(error?.itemVersion == 2)
            #expect(try await changes.next() == nil)
        }
    }

    // MARK: Where the version comes from

    @Test(arguments: StoreKind.allCases)
    func `records written without an item version count as version 1 and are migrated`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            for book in ReadingApp.version1Books {
                try await store.put("books", key: book.id, data: try RecordCoding.encode(book))
            }
            #expect(try await store.itemVersion(of: "books") == nil)
            #expect(try await version2(store).item("quijote") == ReadingApp.migratedBooks[2])
            #expect(try await store.itemVersion(of: "books") == 2)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a new collection records the current version and is never migrated`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let neverRun = ItemMigrationStep.data(from: 1) { _ in throw StepFailure() }
            let books = version2(store, steps: [neverRun])
            #expect(try await books.load() == [])
            #expect(try await store.read("books") == nil, "loading creates nothing")
            try await books.save(ReadingApp.migratedBooks)
            #expect(try await store.itemVersion(of: "books") == 2)
            #expect(try await version2(store, steps: [neverRun]).load() == ReadingApp.migratedBooks)
            #expect(try await store.itemVersions() == ["books": 2])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a save as the first access migrates the stored items first`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<BookV1>(store: store, collection: "books").save(ReadingApp.version1Books)
            let books = version2(store)
            let added = BookV2(id: "emma", title: "Emma", authors: ["Jane Austen"], rating: 5)
            try await books.save(added)
            #expect(try await books.load() == (ReadingApp.migratedBooks + [added]).sorted { $0.id < $1.id })
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `steps run in order from the stored version to the current one`(kind: StoreKind) async throws {
        struct BookV3: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var name: String
            var authors: [String]
            var rating: Int
        }
        try await withStore(kind) { store, _ in
            try await RecordRepository<BookV1>(store: store, collection: "books").save(ReadingApp.version1Books)
            let renameTitle = ItemMigrationStep.data(from: 2) { data in
                Data(String(decoding: data, as: UTF8.self).replacingOccurrences(of: #""title""#, with: #""name""#).utf8)
            }
            let books = RecordRepository<BookV3>(
                store: store, collection: "books", itemVersion: 3, migrations: [renameTitle, ReadingApp.stepFrom1])
            let loaded = try await books.load()
            #expect(loaded.map(\.name) == ["Dune", "Moby-Dick", "Don Quijote"])
            #expect(loaded.map(\.authors) == [["Frank Herbert"], ["Herman Melville"], ["Miguel de Cervantes"]])
            #expect(try await store.itemVersion(of: "books") == 3)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `two repositories opening the same old collection at once migrate it once`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<BookV1>(store: store, collection: "books").save(ReadingApp.version1Books)
            let runs = Counter()
            let counted = ItemMigrationStep.data(from: 1) { data in
                _ = runs.increment()
                return try ReadingApp.stepFrom1.transform(data)
            }
            let first = version2(store, steps: [counted])
            let second = version2(store, steps: [counted])
            async let a = first.load()
            async let b = second.load()
            let (loadedA, loadedB) = try await (a, b)
            #expect(loadedA == ReadingApp.migratedBooks)
            #expect(loadedB == ReadingApp.migratedBooks)
            #expect(runs.count == ReadingApp.version1Books.count, "each item went through the step once")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an item version recorded by a store write is seen by the next save of an older repository`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let old = RecordRepository<BookV1>(store: store, collection: "books")
            try await old.save(ReadingApp.version1Books)
            try await old.save(ReadingApp.version1Books[0], onConflict: .overwrite)
            let before = try await store.allRecords("books")
            // Only the recorded version changes, in a transaction of the same store (the
            // writer's connection, which saw the saves above confirm version 1).
            try await store.write { transaction in try transaction.setItemVersion(2, coding: nil, of: "books") }

            let error = await #expect(throws: RepositoryError.self) {
                try await old.save(ReadingApp.version1Books[1], onConflict: .overwrite)
            }
            #expect(error?.code == .newerItemVersion)
            #expect(try await store.allRecords("books") == before)
        }
    }

    @Test func `a repository of the older version cannot save over items another store on the file migrated`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("books.sqlite")
            let first = RecordStore(url: url)
            let old = RecordRepository<BookV1>(store: first, collection: "books")
            try await old.save(ReadingApp.version1Books)
            // Two more saves: the first store's writer now knows the collection at version 1.
            try await old.save(ReadingApp.version1Books[0], onConflict: .overwrite)
            try await old.save(ReadingApp.version1Books[1], onConflict: .overwrite)

            let second = RecordStore(url: url)
            _ = try await version2(second).load()
            #expect(try await second.itemVersion(of: "books") == 2)
            let migrated = try await second.allRecords("books")

            let error = await #expect(throws: RepositoryError.self) {
                try await old.save(ReadingApp.version1Books[0], onConflict: .overwrite)
            }
            #expect(error?.code == .newerItemVersion)
            #expect(try await second.allRecords("books") == migrated)
            await first.close()
            await second.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a repository of the older version cannot save over migrated items`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let old = RecordRepository<BookV1>(store: store, collection: "books")
            try await old.save(ReadingApp.version1Books)
            _ = try await version2(store).load()
            let migrated = try await store.allRecords("books")
            // `old` already checked the version before; its save checks again in its transaction.
            let error = await #expect(throws: RepositoryError.self) {
                try await old.save(ReadingApp.version1Books[0], onConflict: .overwrite)
            }
            #expect(error?.code == .newerItemVersion)
            #expect(try await store.allRecords("books") == migrated)
        }
    }
}
