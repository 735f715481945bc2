import Foundation
import TestHelpers
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

    /// Device B's conflict on "moby-dick" (both devices edited it at version 1); `upgradeFirst`:
    /// B updated to version 2 (and migrated) between its edit and the sync that met the conflict.
    private func conflictOnB(
        _ stores: [RecordStore], _ a: RecordSync, _ b: RecordSync, upgradeFirst: Bool
    ) async throws -> SyncRecordConflict {
        let onA = ReadingApp.v1(stores[0])
        try await onA.save(ReadingApp.BookV1(id: "moby-dick", title: "Moby-Dick", author: "Herman Melville"))
        _ = try await a.sync()
        _ = try await b.sync()
        try await onA.save(ReadingApp.BookV1(id: "moby-dick", title: "Moby Dick (A)", author: "Herman Melville"))
        _ = try await a.sync()
        let onB = ReadingApp.v1(stores[1])
        _ = try await onB.load()
        try await onB.save(ReadingApp.BookV1(id: "moby-dick", title: "Moby Dick (B)", author: "Herman Melville"))
        if upgradeFirst { _ = try await ReadingApp.v2(stores[1]).load() }
        #expect(try await b.sync().newConflicts.count == 1)
        return try #require(try await stores[1].syncConflicts().first)
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflict met after a migration says the local value's item version as it is now`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["books"]) { stores, a, b in
            let conflict = try await conflictOnB(stores, a, b, upgradeFirst: true)
            // The local value was migrated after its change was captured at version 1.
            let local = try JSONSerialization.jsonObject(with: try #require(conflict.local)) as? [String: Any]
            #expect(local?["authors"] != nil)
            #expect(conflict.localItemVersion == 2)
            try await stores[1].resolveSyncConflict("books", key: "moby-dick", keeping: .local)
            #expect(try await ReadingApp.v2(stores[1]).item("moby-dick")?.title == "Moby Dick (B)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keeping a local value of an older item version after the app updated is refused`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["books"]) { stores, a, b in
            let conflict = try await conflictOnB(stores, a, b, upgradeFirst: false)
            #expect(conflict.localItemVersion == 1)
            // B updates to version 2: its migration rewrites the records, not the conflict.
            let onB = ReadingApp.v2(stores[1])
            #expect(try await onB.item("moby-dick")?.authors == ["Herman Melville"])
            let error = await #expect(throws: RecordStoreError.self) {
                try await stores[1].resolveSyncConflict("books", key: "moby-dick", keeping: .local)
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.detail?.contains("item version 1") == true, "\(String(describing: error))")
            #expect(try await stores[1].syncConflicts().count == 1, "nothing was written")
            let merged = ReadingApp.BookV2(id: "moby-dick", title: "Moby Dick (B)", authors: ["Herman Melville"], rating: 0)
            try await stores[1].resolveSyncConflict("books", key: "moby-dick", keeping: .merged(try RecordCoding.encode(merged)))
            #expect(try await onB.item("moby-dick") == merged)
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

    @Test(arguments: StoreKind.allCases)
    func `a typed query migrates records pulled from an older app first and names those of a newer one`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 3) { stores in
            let server = InMemorySyncServer()
            let syncs = stores.map { RecordSync(store: $0, server: server) }
            for sync in syncs { try await sync.start(space: "alice", collections: ["books"]) }
            let here = ReadingApp.v2(stores[0])
            try await here.save(ReadingApp.BookV2(id: "dune", title: "Dune", authors: ["Frank Herbert"], rating: 3))
            try await ReadingApp.v1(stores[1]).save(ReadingApp.BookV1(id: "walden", title: "Walden", author: "Thoreau"))
            for sync in syncs { _ = try await sync.sync() }
            _ = try await syncs[0].sync()
            let rated = RecordRepository<RatedBook>(
                store: stores[0], collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            #expect(
                try await rated.query(orderBy: [RatedBook.byRating.ascending]).elements == [
                    RatedBook(id: "walden", title: "Walden", authors: ["Thoreau"], rating: 0),
                    RatedBook(id: "dune", title: "Dune", authors: ["Frank Herbert"], rating: 3),
                ])

            try await ReadingApp.v3(stores[2]).save(
                ReadingApp.BookV3(id: "solaris", title: "Solaris", authors: ["Lem"], rating: 8, scale: 10))
            _ = try await syncs[2].sync()
            _ = try await syncs[0].sync()
            let error = await #expect(throws: RepositoryError.self) { _ = try await rated.query() }
            #expect(error?.code == .newerItemVersion && error?.key == "solaris")
            #expect(try await rated.count() == 3)
        }
    }
}

/// `ReadingApp.BookV2` as a queryable type (a conformance of the shared public type would be
/// public too).
struct RatedBook: Codable, Identifiable, Equatable, Sendable, Queryable {
    var id: String
    var title: String
    var authors: [String]
    var rating: Int

    static let byRating = Field<RatedBook, Int>("rating")
    static let queryFields: [any QueryField] = [byRating]
}
