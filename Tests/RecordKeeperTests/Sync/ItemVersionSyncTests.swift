import Foundation
import RecordKeeperTestSupport
import Testing
@testable import RecordKeeper

/// Item versions travel with synced changes (issue 26, part 1): a migration step never runs on
/// a payload that is already past the version it starts from, even when the payload came from
/// another device. The books are the docs' own example (`ReadingApp`).
@Suite struct ItemVersionSyncTests {
    @Test(arguments: StoreKind.allCases)
    func `a device updating after another never migrates the payloads the other one already migrated`(
        kind: StoreKind
    ) async throws {
        try await withSyncingDevices(kind, collections: ["books"]) { stores, a, b in
            try await ReadingApp.v1(stores[0]).save([
                ReadingApp.BookV1(id: "moby-dick", title: "Moby-Dick", author: "Herman Melville"),
                ReadingApp.BookV1(id: "walden", title: "Walden", author: "Henry David Thoreau"),
            ])
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await ReadingApp.v1(stores[1]).load().count == 2)

            // Device A updates to version 2 and migrates; the person rates a book there.
            let onA = ReadingApp.v2(stores[0])
            var moby = try #require(try await onA.item("moby-dick"))
            moby.rating = 5
            try await onA.save(moby)
            _ = try await a.sync()

            // Device B, still on version 1, syncs, then updates to version 2.
            _ = try await b.sync()
            let onB = ReadingApp.v2(stores[1])
            let expected = [
                ReadingApp.BookV2(id: "moby-dick", title: "Moby-Dick", authors: ["Herman Melville"], rating: 5),
                ReadingApp.BookV2(id: "walden", title: "Walden", authors: ["Henry David Thoreau"], rating: 0),
            ]
            #expect(try await onB.load() == expected)
            _ = try await b.sync()
            _ = try await a.sync()
            #expect(try await onA.load() == expected, "no device loses an author")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a deletion by a newer app is not a newer record on a device of the older app`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["books"]) { stores, a, b in
            try await ReadingApp.v1(stores[0]).save([
                ReadingApp.BookV1(id: "dune", title: "Dune", author: "Frank Herbert"),
                ReadingApp.BookV1(id: "walden", title: "Walden", author: "Henry David Thoreau"),
            ])
            _ = try await a.sync()
            _ = try await b.sync()
            let onA = ReadingApp.v2(stores[0])
            _ = try await onA.load()
            #expect(try await onA.delete("dune"))
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await ReadingApp.v1(stores[1]).load().map(\.id) == ["walden"])
        }
    }
}
