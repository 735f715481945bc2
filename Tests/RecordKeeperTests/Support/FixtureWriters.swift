import Foundation
import Testing
@testable import RecordKeeper

/// "Version 1" and "version 2" of an app's item type, for the item-migration fixtures and tests.
enum ReadingApp {
    /// Version 1: one author.
    struct BookV1: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var title: String
        var author: String
    }

    /// Version 2: several authors and a rating (a non-optional property v1 items lack).
    struct BookV2: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var title: String
        var authors: [String]
        var rating: Int
    }

    /// The step from version 1 to 2: `author` becomes `authors`, `rating` starts at 0.
    static let stepFrom1 = ItemMigrationStep.json(from: 1) { book in
        book["authors"] = [book["author"] ?? ""]
        book["author"] = nil
        book["rating"] = 0
    }

    /// What version 1 of the app stored in the fixture.
    static let version1Books = [
        BookV1(id: "dune", title: "Dune", author: "Frank Herbert"),
        BookV1(id: "moby-dick", title: "Moby-Dick", author: "Herman Melville"),
        BookV1(id: "quijote", title: "Don Quijote", author: "Miguel de Cervantes"),
    ]

    /// The same books as version 2 reads them after the migration.
    static let migratedBooks = version1Books.map {
        BookV2(id: $0.id, title: $0.title, authors: [$0.author], rating: 0)
    }
}

/// Writers of the committed fixture stores (Tests/RecordKeeperTests/Fixtures, see its README).
/// Each writes a store with the current library and closes it, so the WAL is checkpointed into
/// the file.
enum FixtureWriters {
    /// `app-v1-books.sqlite`: a store written by "version 1" of the reading app.
    static func writeVersion1App(to url: URL) async throws {
        let store = RecordStore(url: url)
        let books = RecordRepository<ReadingApp.BookV1>(store: store, collection: "books")
        try await books.save(ReadingApp.version1Books)
        try await store.put("notes", key: "today", data: Data(#"{"text":"Read chapter 3"}"#.utf8))
        await store.close()
    }

    /// `format-4.sqlite`: the format-1 fixture's content plus collections with item versions.
    static func writeFormat4(to url: URL) async throws {
        let store = RecordStore(url: url)
        try await store.replace("progress", values: [
            "positions/moby-dick": Data(#"{"chapter":12,"offset":3400}"#.utf8),
            "vocabulary/café": Data(#"{"meaning":"coffee","seen":1}"#.utf8),
        ])
        try await store.replace("settings", values: [:])
        let books = RecordRepository<ReadingApp.BookV2>(
            store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
        try await books.save(ReadingApp.migratedBooks)
        let tags = RecordRepository<Chapter>(store: store, collection: "chapters")
        try await tags.save([Chapter(id: 1, title: "Loomings"), Chapter(id: 2, title: "The Carpet-Bag")])
        await store.close()
    }
}

extension FixtureWriters {
    /// `format-5.sqlite` (format 5, the device side of sync), synced through an in-memory
    /// server with a second device: `notes` (policy report) and `prefs` (last-writer-wins)
    /// synced with space `alice`, `scratch` not synced; one conflict (`notes/shared`: local
    /// "mine", server "theirs"); two pending operations (`notes/today` = "v2 local", with the
    /// other device's "v2 theirs" kept aside, and `prefs/theme` = "dark").
    static func writeFormat5(to url: URL) async throws {
        let server = InMemorySyncServer()
        let store = RecordStore(url: url)
        try await store.replace("scratch", values: ["local": Data("not synced".utf8)])
        try await store.replace("notes", values: ["today": Data("v1".utf8), "shared": Data("mine".utf8)])
        let sync = RecordSync(store: store, server: server)
        try await sync.start(space: "alice", collections: ["notes"])
        try await sync.start(space: "alice", collections: ["prefs"], policy: .lastWriterWins)
        let other = RecordSync(store: RecordStore.inMemory(), server: server)
        try await other.start(space: "alice", collections: ["notes"])
        try await other.store.put("notes", key: "shared", data: Data("theirs".utf8))
        _ = try await other.sync()
        _ = try await sync.sync()
        _ = try await other.sync()
        try await other.store.put("notes", key: "today", data: Data("v2 theirs".utf8))
        _ = try await other.sync()
        try await store.put("notes", key: "today", data: Data("v2 local".utf8))
        _ = try await sync.pull()
        try await store.put("prefs", key: "theme", data: Data("dark".utf8))
        await store.close()
    }
}

/// Regenerates the fixtures written by ``FixtureWriters`` (needed when the format numbering
/// changes). Run only on request:
///
///     RECORDKEEPER_WRITE_FIXTURES=1 swift test --filter FixtureWriterTests
@Suite struct FixtureWriterTests {
    static let isRequested = ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURES"].map { $0 != "format-5" } ?? false
    static let isFormat5Requested = ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURES"] == "format-5"

    /// `RECORDKEEPER_WRITE_FIXTURES=format-5 swift test --filter FixtureWriterTests` writes
    /// `format-5.sqlite` alone (the format 4 fixtures stay as they are).
    @Test(.enabled(if: isFormat5Requested))
    func `writes the format 5 fixture into Tests/RecordKeeperTests/Fixtures`() async throws {
        let directory = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
        let url = directory.appendingPathComponent("format-5.sqlite")
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.removeItem(atPath: url.path + suffix)
        }
        try await FixtureWriters.writeFormat5(to: url)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"), "closing checkpoints the log")
    }

    @Test(.enabled(if: isRequested))
    func `writes the fixture stores into Tests/RecordKeeperTests/Fixtures`() async throws {
        let directory = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
        for (name, write) in [
            ("app-v1-books.sqlite", FixtureWriters.writeVersion1App),
            ("format-4.sqlite", FixtureWriters.writeFormat4),
        ] as [(String, @Sendable (URL) async throws -> Void)] {
            let url = directory.appendingPathComponent(name)
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.removeItem(atPath: url.path + suffix)
            }
            try await write(url)
            #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"), "closing checkpoints the log")
        }
    }
}
