import RecordKeeperTestSupport
import Foundation
import Testing
@testable import RecordKeeper

/// Stores already in people's hands must keep opening and reading in every later version.
@Suite struct FormatFixtureTests {
    /// Copies a committed fixture into a fresh directory (opening may migrate or checkpoint).
    private func fixtureCopy(_ name: String, into directory: URL) throws -> URL {
        let source = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        let destination = directory.appendingPathComponent(name)
        try FileManager.default.copyItem(at: source, to: destination)
        return destination
    }

    @Test func `a format 1 store opens and reads as it was written`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            let progress = try #require(try await store.read("progress"))
            #expect(progress.count == 4)
            #expect(progress["positions/moby-dick"] == Data(#"{"chapter":13,"offset":120}"#.utf8))
            #expect(progress["vocabulary/café"] == Data(#"{"meaning":"coffee","seen":1}"#.utf8))
            #expect(try await store.read("settings") == [:])
            #expect(try await store.read("never") == nil)
            let notes = try #require(try await store.read("notes"))
            #expect(notes == ["empty": Data(), "binary": Data([0x00, 0xFF, 0x10, 0x80]), "nul\u{0}key": Data("nul".utf8)])
            #expect(try await store.record("progress", key: "positions/moby-dick")?.version == RecordVersion(2))
            #expect(try await store.record("notes", key: "binary")?.version == RecordVersion(3))
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion, "opening migrated it")
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 1 store migrates with every record kept and no item version recorded`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            let collections = try await store.collections()
            #expect(collections.map(\.name) == ["notes", "progress", "settings"])
            #expect(collections.map(\.recordCount) == [3, 4, 0])
            #expect(try await store.itemVersions() == [:])
            #expect(try await store.itemVersion(of: "progress") == nil)
            // A repository reads the records as version 1 items and records the version on
            // its first write.
            struct Note: Codable, Identifiable, Equatable, Sendable { var id: String }
            let repository = RecordRepository<Note>(store: store, collection: "settings")
            try await repository.save(Note(id: "a"))
            #expect(try await store.itemVersions() == ["settings": 1])
            #expect(try await store.read("progress")?.count == 4)
        }
    }

    @Test func `a format 4 store opens with its item versions`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-4.sqlite", into: directory)
            let header = try Data(contentsOf: url)
            #expect(header[60..<64] == Data([0, 0, 0, 4]), "the fixture was written by format 4 (user_version)")
            let store = RecordStore(url: url)
            #expect(try await store.itemVersions() == ["books": 2, "chapters": 1])
            #expect(try await store.itemVersion(of: "settings") == nil)
            #expect(try await store.read("settings") == [:])
            #expect(try await store.read("progress")?["vocabulary/café"] == Data(#"{"meaning":"coffee","seen":1}"#.utf8))
            let books = RecordRepository<ReadingApp.BookV2>(
                store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            #expect(try await books.load() == ReadingApp.migratedBooks)
            #expect(try await RecordRepository<Chapter>(store: store, collection: "chapters").load().count == 2)
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 1 store takes new writes after the versions it holds`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            try await store.put("progress", key: "positions/moby-dick", data: Data("{}".utf8))
            let version = try #require(try await store.record("progress", key: "positions/moby-dick")).version
            #expect(version == RecordVersion(3), "an update gives the record its previous version + 1")
            try await store.removeCollection("notes")
            try await store.put("notes", key: "binary", data: Data([1]))
            let recreated = try #require(try await store.record("notes", key: "binary")).version
            #expect(recreated > RecordVersion(3), "a record written again after removal never gets an old version back")
            #expect(try await store.read("progress")?.count == 4)
        }
    }

    @Test func `the migration plan is ordered and ends at the current format`() {
        // Gaps are allowed (numbers are kept for formats added on other branches); the order is not.
        let versions = StoreFormat.migrations.map(\.version)
        #expect(versions.first == 1)
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 })
        #expect(StoreFormat.currentVersion == versions.last)
    }
}
