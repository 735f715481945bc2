import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// A repository's change stream reads items as its loads do: a record pulled from a newer app
/// is named, never decoded as this version's type; one pulled from an older app is migrated
/// first; a collection recorded with other payload strategies is refused.
@Suite struct ItemVersionStreamTests {
    /// Saves Dune through `here` (version 2), syncs both devices, and returns an iterator of
    /// `here`'s change stream registered after that.
    private static func duneOnBoth(
        _ here: RecordRepository<ReadingApp.BookV2>, _ a: RecordSync, _ b: RecordSync
    ) async throws -> RepositoryChanges<ReadingApp.BookV2>.AsyncIterator {
        try await here.save(ReadingApp.BookV2(id: "dune", title: "Dune", authors: ["Frank Herbert"], rating: 3))
        _ = try await a.sync()
        _ = try await b.sync()
        return await here.changes().makeAsyncIterator()
    }

    @Test(arguments: StoreKind.allCases)
    func `a change stream names a record pulled from a newer app instead of decoding it`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["books"]) { stores, a, b in
            let here = ReadingApp.v2(stores[0])
            var iterator = try await Self.duneOnBoth(here, a, b)

            // A version 3 app (ratings out of 10) on the other device: a v3 payload decodes as
            // a v2 book, with its rating on the wrong scale.
            let there = ReadingApp.v3(stores[1])
            var dune = try #require(try await there.item("dune"))
            dune.rating = 8
            try await there.save(dune)
            _ = try await b.sync()
            _ = try await a.sync()

            let error = await #expect(throws: RepositoryError.self) { _ = try await iterator.next() }
            #expect(error?.code == .newerItemVersion)
            #expect(error?.key == "dune")
            #expect(error?.itemVersion == 3)
            let loadError = await #expect(throws: RepositoryError.self) { try await here.load() }
            #expect(loadError?.code == .newerItemVersion)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a change stream migrates a record pulled from an older app before yielding it`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["books"]) { stores, a, b in
            let here = ReadingApp.v2(stores[0])
            var iterator = try await Self.duneOnBoth(here, a, b)

            try await ReadingApp.v1(stores[1]).save(ReadingApp.BookV1(id: "walden", title: "Walden", author: "Thoreau"))
            _ = try await b.sync()
            _ = try await a.sync()

            let walden = ReadingApp.BookV2(id: "walden", title: "Walden", authors: ["Thoreau"], rating: 0)
            var seen: [ReadingApp.BookV2] = []
            while !seen.contains(walden), let change = try await iterator.next() { seen += change.upserted }
            #expect(seen.allSatisfy { $0 == walden }, "\(seen)")
            #expect(try await here.load().map(\.id) == ["dune", "walden"])
        }
    }

    struct Event: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var startsAt: Date
    }

    @Test(arguments: StoreKind.allCases)
    func `a change stream of a repository with other strategies than the recorded ones is refused`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let seconds = RecordRepository<Event>(store: store, collection: "events", strategies: .init(dates: .secondsSince1970))
            try await seconds.save(Event(id: "launch", startsAt: Date(timeIntervalSince1970: 1_700_000_000)))
            let defaults = RecordRepository<Event>(store: store, collection: "events")
            var iterator = await defaults.changes().makeAsyncIterator()
            try await seconds.save(Event(id: "later", startsAt: Date(timeIntervalSince1970: 1_800_000_000)))

            // Read with the defaults (seconds since 2001), the date would be 31 years off.
            let error = await #expect(throws: RepositoryError.self) { _ = try await iterator.next() }
            #expect(error?.code == .codingMismatch)
        }
    }
}
