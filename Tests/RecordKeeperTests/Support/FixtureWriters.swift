import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// "Version 1" and "version 2" of an app's item type, for the item-migration fixtures and tests.
extension ReadingApp {
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
    /// Writes a store of the older format `version` at `url`, holding what `write` stores.
    ///
    /// The library only writes the current format, so `write` fills a scratch store with it;
    /// then a new file is created by the first `version` steps of `StoreFormat.migrations` and
    /// given the rows of every table that format has, in one transaction, and closed (the WAL
    /// is checkpointed into the file). The later formats changed nothing in how the tables of
    /// the earlier ones are written, so the file holds what format `version` wrote.
    static func writeStore(format version: Int, to url: URL, _ write: (URL) async throws -> Void) async throws {
        precondition(version < StoreFormat.currentVersion, "the current format is written by the library itself")
        try await withTemporaryDirectory { scratchDirectory in
            let scratch = scratchDirectory.appendingPathComponent("scratch.sqlite")
            try await write(scratch)
            try StoreOpener.prepareFile(at: url.path)
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            try Migrator.run(
                Array(StoreFormat.migrations.prefix(version)), on: connection, from: 0,
                applicationID: StoreFormat.applicationID)
            #expect(try connection.enableWriteAheadLog() == "wal")
            let attach = try Statement(connection: connection.handle, sql: "ATTACH DATABASE ?1 AS scratch", persistent: false)
            try attach.bind(scratch.path, at: 1)
            try attach.run()
            try connection.beginImmediate()
            // Names of this format's own tables and columns (never input), quoted.
            for table in try names(connection, "SELECT name FROM main.sqlite_master WHERE type = 'table' ORDER BY name") {
                let columns = try names(connection, "SELECT name FROM pragma_table_info('\(table)', 'main')")
                    .map { "\"\($0)\"" }.joined(separator: ", ")
                try connection.execute(
                    """
                    DELETE FROM main."\(table)";
                    INSERT INTO main."\(table)" (\(columns)) SELECT \(columns) FROM scratch."\(table)";
                    """)
            }
            try connection.commit()
            try connection.execute("DETACH DATABASE scratch")
            #expect(try connection.userVersion() == version)
        }
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"), "closing checkpoints the log")
    }

    /// The first column of every row `sql` (constant SQL of the fixture writers) returns.
    private static func names(_ connection: SQLiteConnection, _ sql: String) throws -> [String] {
        let statement = try Statement(connection: connection.handle, sql: sql, persistent: false)
        var result: [String] = []
        while try statement.step() { result.append(statement.string(at: 0)) }
        return result
    }

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

    /// `format-6.sqlite` (format 6, payload strategies): `events` written by a repository with
    /// ISO 8601 dates and snake-case keys (recorded), `books` by one with the defaults and item
    /// version 2 (nothing recorded but the version), `notes` by the record-level API.
    static func writeFormat6(to url: URL) async throws {
        let store = RecordStore(url: url)
        try await store.replace("notes", values: ["today": Data("plain record".utf8)])
        let events = RecordRepository<FormatSixFixture.Event>(
            store: store, collection: "events", strategies: FormatSixFixture.strategies)
        try await events.save(FormatSixFixture.events)
        let books = RecordRepository<ReadingApp.BookV2>(
            store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
        try await books.save(ReadingApp.migratedBooks)
        await store.close()
    }
}

extension FixtureWriters {
    /// `format-7.sqlite` (format 7, declared indexes): `words`, three JSON records with a
    /// declared index on `dueAt` and one on `level`; `notes`, a plain record and no index.
    static func writeFormat7(to url: URL) async throws {
        let store = RecordStore(url: url)
        try await store.replace("notes", values: ["today": Data("plain record".utf8)])
        try await store.replace("words", values: FormatSevenFixture.words)
        try await store.declareIndex("words", on: FieldPath("dueAt"))
        try await store.declareIndex("words", on: FieldPath("level"))
        await store.close()
    }
}

/// What `format-7.sqlite` holds.
enum FormatSevenFixture {
    static let words: [String: Data] = [
        "tree": Data(#"{"dueAt":30,"level":1}"#.utf8),
        "run": Data(#"{"dueAt":10,"level":2}"#.utf8),
        "sun": Data(#"{"dueAt":20,"level":1}"#.utf8),
    ]
}

/// What `format-6.sqlite` holds.
enum FormatSixFixture {
    struct Event: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var startsAt: Date
        var roomName: String
    }

    static let strategies = RecordCoding.Strategies(dates: .iso8601, keys: .snakeCase)
    static let events = [
        Event(id: "launch", startsAt: Date(timeIntervalSince1970: 1_700_000_000), roomName: "Main hall"),
        Event(id: "retro", startsAt: Date(timeIntervalSince1970: 1_800_000_000), roomName: "Side room"),
    ]
}

/// Regenerates the fixtures written by ``FixtureWriters`` (needed only while their formats are
/// unreleased, for example when the format numbering changes). Run only on request, naming the
/// fixtures (comma-separated) or `all`:
///
///     RECORDKEEPER_WRITE_FIXTURES=format-5 swift test --filter FixtureWriterTests
///
/// `app-v1-books` and `format-4` are format 4 stores, `format-5` a format 5 store: they are
/// written through ``FixtureWriters/writeStore(format:to:_:)``, which creates the file with
/// that format's own steps.
@Suite struct FixtureWriterTests {
    static let requested: Set<String> = Set(
        (ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURES"] ?? "")
            .split(separator: ",").map(String.init))

    static func isRequested(_ name: String) -> Bool { requested.contains(name) || requested.contains("all") }

    @Test(.enabled(if: !requested.isEmpty))
    func `writes the requested fixture stores into Tests/RecordKeeperTests/Fixtures`() async throws {
        let directory = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
        let writers: [(String, @Sendable (URL) async throws -> Void)] = [
            ("app-v1-books", { try await FixtureWriters.writeStore(format: 4, to: $0, FixtureWriters.writeVersion1App) }),
            ("format-4", { try await FixtureWriters.writeStore(format: 4, to: $0, FixtureWriters.writeFormat4) }),
            ("format-5", { try await FixtureWriters.writeStore(format: 5, to: $0, FixtureWriters.writeFormat5) }),
            ("format-6", { try await FixtureWriters.writeStore(format: 6, to: $0, FixtureWriters.writeFormat6) }),
            ("format-7", { try await FixtureWriters.writeStore(format: 7, to: $0, FixtureWriters.writeFormat7) }),
            ("format-8", { try await FixtureWriters.writeStore(format: 8, to: $0, FixtureWriters.writeFormat8) }),
            ("format-9", FixtureWriters.writeFormat9),
        ]
        for (name, write) in writers where Self.isRequested(name) {
            let url = directory.appendingPathComponent(name + ".sqlite")
            for suffix in ["", "-wal", "-shm", "-observers"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.removeItem(atPath: url.path + suffix)
            }
            try await write(url)
            #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"), "closing checkpoints the log")
            // The observers' lock file of the writes (docs/FORMAT.md) is not part of a fixture.
            if FileManager.default.fileExists(atPath: url.path + "-observers") {
                try FileManager.default.removeItem(atPath: url.path + "-observers")
            }
        }
    }
}
