import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// A repository's date and key strategies: written as Foundation writes them, recorded with
/// the collection, and never used to misread items stored with others.
@Suite struct RepositoryStrategiesTests {
    struct Event: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var startsAt: Date
        var roomName: String
    }

    static let iso = RecordCoding.Strategies(dates: .iso8601, keys: .snakeCase)
    static let event = Event(id: "launch", startsAt: Date(timeIntervalSince1970: 1_700_000_000), roomName: "Main hall")

    @Test(arguments: StoreKind.allCases)
    func `items are written with the repository's strategies and the strategies are recorded`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let events = RecordRepository<Event>(store: store, collection: "events", strategies: Self.iso)
            try await events.save(Self.event)
            let stored = try await store.value("events", key: "launch")
            #expect(stored == (try RecordCoding.makeEncoder(Self.iso).encode(Self.event)))
            #expect(String(decoding: try #require(stored), as: UTF8.self)
                    == #"{"id":"launch","room_name":"Main hall","starts_at":"2023-11-14T22:13:20Z"}"#)
            #expect(try await events.load() == [Self.event])
            #expect(try await RecordRepository<Event>(store: store, collection: "events", strategies: Self.iso).load() == [Self.event])
            let recorded = try await store.performRead(.itemVersion, collection: "events") { try $0.engine?.itemVersions.itemVersion("events") }
            #expect(recorded == .recorded(1, coding: "dates=iso8601;keys=snakeCase"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a repository with other strategies than the recorded ones is refused and changes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Event>(store: store, collection: "events", strategies: Self.iso).save(Self.event)
            let before = try await store.read("events")
            for strategies in [RecordCoding.Strategies.default, .init(dates: .iso8601), .init(keys: .snakeCase)] {
                let other = RecordRepository<Event>(store: store, collection: "events", strategies: strategies)
                let read = await #expect(throws: RepositoryError.self) { try await other.load() }
                #expect(read?.code == .codingMismatch, "\(strategies)")
                #expect(read?.description.contains("dates iso8601, keys snakeCase") == true, "names what was recorded")
                await #expect(throws: RepositoryError.self) { try await other.item("launch") }
                let write = await #expect(throws: RepositoryError.self) {
                    try await other.save(Event(id: "other", startsAt: Date(timeIntervalSince1970: 0), roomName: "x"), onConflict: .overwrite)
                }
                #expect(write?.code == .codingMismatch)
                await #expect(throws: RepositoryError.self) { try await other.delete("launch", onConflict: .overwrite) }
            }
            #expect(try await store.read("events") == before)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the defaults are refused on a collection recorded with other strategies, and the other way round`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Event>(store: store, collection: "plain").save(Self.event)
            let snake = RecordRepository<Event>(store: store, collection: "plain", strategies: .init(keys: .snakeCase))
            let error = await #expect(throws: RepositoryError.self) { try await snake.load() }
            #expect(error?.code == .codingMismatch)
            #expect(try await RecordRepository<Event>(store: store, collection: "plain").load() == [Self.event])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `raising the item version rewrites every item with the new strategies in one migration`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Event>(store: store, collection: "events").save([
                Self.event, Event(id: "later", startsAt: Date(timeIntervalSince1970: 1_800_000_000), roomName: "Side room"),
            ])
            let migrated = RecordRepository<Event>(
                store: store, collection: "events", itemVersion: 2, migrations: [.data(from: 1) { $0 }], strategies: Self.iso)
            #expect(try await migrated.load().map(\.id) == ["later", "launch"])
            let stored = try #require(try await store.value("events", key: "launch"))
            #expect(stored == (try RecordCoding.makeEncoder(Self.iso).encode(Self.event)), "rewritten in the new strategies")
            #expect(try await store.itemVersion(of: "events") == 2)
            let old = RecordRepository<Event>(store: store, collection: "events", itemVersion: 2, migrations: [.data(from: 1) { $0 }])
            await #expect(throws: RepositoryError.self) { try await old.load() }
        }
    }

    @Test func `strategies a newer library recorded are refused, not guessed`() async throws {
        try await withStore(.onDisk) { store, _ in
            try await RecordRepository<Event>(store: store, collection: "events", strategies: Self.iso).save(Self.event)
            try await store.write(origin: .library) { tx in
                try tx.setItemVersion(1, coding: "dates=formatted;keys=snakeCase", of: "events")
            }
            let error = await #expect(throws: RepositoryError.self) {
                try await RecordRepository<Event>(store: store, collection: "events", strategies: Self.iso).load()
            }
            #expect(error?.code == .codingMismatch)
            #expect(error?.description.contains("newer version") == true)
        }
    }
}
