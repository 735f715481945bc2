import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// Format 8 (docs/FORMAT.md): the item versions of synced payloads, kept in the store file.
@Suite struct ItemVersionFormatTests {
    private func columns(_ store: RecordStore, _ table: String) async throws -> [String] {
        try await store.performRead(.read, collection: nil) { source in
            guard let engine = source.engine else { return [] }
            return try engine.connection.withStatement("SELECT name FROM pragma_table_info(?1) ORDER BY cid") { statement in
                try statement.bind(table, at: 1)
                var names: [String] = []
                while try statement.step() { names.append(statement.string(at: 0)) }
                return names
            }
        }
    }

    @Test func `format 5 and 7 stores migrate to format 8 and on with their records and sync state unchanged`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-5.sqlite", into: directory)
            let store = RecordStore(url: url)
            let before = try await store.read("notes")
            let status = try await store.syncStatus()
            let conflicts = try await store.syncConflicts()
            try await store.put("scratch", key: "after", data: Data("x".utf8))   // the first write migrates
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await store.read("notes") == before)
            #expect(try await store.syncStatus() == status)
            #expect(try await store.syncConflicts() == conflicts)
            #expect(try await columns(store, "sync_records").suffix(2) == ["item_version", "aside_item_version"])
            #expect(try await columns(store, "sync_operation_changes").last == "item_version")
            #expect(try await columns(store, "sync_conflicts").suffix(2) == ["local_item_version", "server_item_version"])
            #expect(try await store.integrityCheck() == ["ok"])
        }
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-7.sqlite", into: directory)
            let store = RecordStore(url: url)
            let words = try await store.read("words")
            try await store.put("notes", key: "after", data: Data("x".utf8))
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await store.read("words") == words)
            #expect(try await store.declaredIndexes("words").map(\.description) == ["dueAt", "level"])
        }
    }

    @Test func `a format 8 store holds the item versions of pulled values, values kept aside and pending changes`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-8.sqlite", into: directory)
            let header = try Data(contentsOf: url)
            #expect(header[60..<64] == Data([0, 0, 0, 8]), "the fixture was written by format 8 (user_version)")
            let store = RecordStore(url: url)
            #expect(try await store.syncStatus()?.pendingOperations == 1)
            let books = RecordRepository<ReadingApp.BookV2>(
                store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            let partial = try await books.loadPartial()
            // Walden (from a version-1 device) is migrated here; Solaris (version 3) is named, not read.
            #expect(
                partial.items == [
                    FormatEightFixture.localDune, ReadingApp.migratedBooks[1], ReadingApp.migratedBooks[2],
                    ReadingApp.BookV2(id: "walden", title: "Walden", authors: ["Henry David Thoreau"], rating: 0),
                ])
            #expect(partial.skipped.map(\.key) == ["solaris"])
            #expect(partial.skipped.first?.error.code == .newerItemVersion)
            #expect(partial.skipped.first?.error.itemVersion == 3)
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }
}
