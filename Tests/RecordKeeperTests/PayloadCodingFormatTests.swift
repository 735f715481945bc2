import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Format 6: the payload strategies recorded with each collection, on committed fixtures.
@Suite struct PayloadCodingFormatTests {
    @Test func `a format 5 store migrates to format 6 keeping everything, every collection with the default strategies`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-5.sqlite", into: directory)
            let store = RecordStore(url: url)
            let notesBefore = try #require(try await store.read("notes"))
            let statusBefore = try await store.syncStatus()
            // A repository reads a format 5 collection (no payload_coding column) as the defaults.
            struct Note: Codable, Identifiable, Equatable, Sendable { var id: String }
            #expect(try await store.info().formatVersion == 5)
            try await store.put("later", key: "k", data: Data("written after the migration"))
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await store.read("notes") == notesBefore)
            let status = try await store.syncStatus()
            #expect(status?.space == statusBefore?.space && status?.collections == statusBefore?.collections)
            #expect(status?.conflicts == statusBefore?.conflicts)
            let notes = try await store.performRead(.itemVersions, collection: nil) { try $0.engine?.itemVersions.itemVersion("notes") }
            #expect(notes == .unrecorded)
            let snake = RecordRepository<Note>(store: store, collection: "later", strategies: .init(keys: .snakeCase))
            let error = await #expect(throws: RepositoryError.self) { try await snake.load() }
            #expect(error?.code == .codingMismatch, "records written before hold the default strategies")
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a store of an older format, read as it is, gives repositories the default strategies`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-4.sqlite", into: directory)
            let store = RecordStore(url: url)
            let books = RecordRepository<ReadingApp.BookV2>(
                store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            #expect(try await books.item("dune")?.title == "Dune")
            #expect(try await store.info().formatVersion == 4, "reading never migrates")
        }
    }

    @Test func `a format 6 store opens with its recorded strategies`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-6.sqlite", into: directory)
            let header = try Data(contentsOf: url)
            #expect(header[60..<64] == Data([0, 0, 0, 6]), "the fixture was written by format 6 (user_version)")
            let store = RecordStore(url: url)
            let events = RecordRepository<FormatSixFixture.Event>(
                store: store, collection: "events", strategies: FormatSixFixture.strategies)
            #expect(try await events.load() == FormatSixFixture.events)
            #expect(String(decoding: try #require(try await store.value("events", key: "launch")), as: UTF8.self)
                    == #"{"id":"launch","room_name":"Main hall","starts_at":"2023-11-14T22:13:20Z"}"#)
            let misread = RecordRepository<FormatSixFixture.Event>(store: store, collection: "events")
            let error = await #expect(throws: RepositoryError.self) { try await misread.load() }
            #expect(error?.code == .codingMismatch)
            let books = RecordRepository<ReadingApp.BookV2>(
                store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            #expect(try await books.load() == ReadingApp.migratedBooks)
            #expect(try await store.itemVersions() == ["books": 2, "events": 1])
            #expect(try await store.read("notes") == ["today": Data("plain record")])
            try await events.save(FormatSixFixture.Event(id: "new", startsAt: Date(timeIntervalSince1970: 0), roomName: "r"))
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }
}
