import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// Issue 26's first "Done when": two devices and item versions 1 → 2 → 3, one device updating
/// before the other and both editing in between, against every server implementation. Every
/// record ends at the newest shape, migrated exactly once; nothing is decoded as the wrong
/// version; nothing is lost; a version-1 app's write over a version-2 record is a reported
/// conflict (docs/SYNC.md "Item versions"). The books are `ReadingApp`'s.
@Suite struct ItemVersionsAcrossDevicesTests {
    @Test(arguments: ServerKind.allCases, StoreKind.allCases)
    func `two devices going from item version 1 to 3 at different times end with every book at version 3, migrated once`(
        server kind: ServerKind, store storeKind: StoreKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        try await withTemporaryDirectory { directory in
            let phone = storeKind.makeStore(at: directory.appendingPathComponent("phone.sqlite"))
            let tablet = storeKind.makeStore(at: directory.appendingPathComponent("tablet.sqlite"))
            let a = RecordSync(store: phone, server: server)
            let b = RecordSync(store: tablet, server: server)
            try await a.start(space: space, collections: ["books"])
            try await b.start(space: space, collections: ["books"])

            // Both run version 1.
            try await ReadingApp.v1(phone).save([
                ReadingApp.BookV1(id: "moby-dick", title: "Moby-Dick", author: "Herman Melville"),
                ReadingApp.BookV1(id: "bartleby", title: "Bartleby", author: "Herman Melville"),
            ])
            _ = try await a.sync()
            _ = try await b.sync()
            let tabletV1 = ReadingApp.v1(tablet)
            _ = try await tabletV1.load()
            try await tabletV1.save(ReadingApp.BookV1(id: "walden", title: "Walden", author: "Henry David Thoreau"))
            _ = try await b.sync()
            _ = try await a.sync()

            // The phone updates to version 2 (its migration is its own: nothing is pushed) and
            // rates Moby-Dick: that change travels at item version 2.
            let phoneV2 = ReadingApp.v2(phone)
            var moby = try #require(try await phoneV2.item("moby-dick"))
            moby.rating = 4
            try await phoneV2.save(moby)
            let phoneReport = try await a.sync()
            #expect(phoneReport.pushedChanges == 1, "the migration's rewrites are not pushed, the edit is")

            // The tablet, still on version 1, edits Bartleby and pulls the version-2 Moby-Dick,
            // which it names as written by a newer app instead of decoding it.
            _ = try await tabletV1.load()
            try await tabletV1.save(ReadingApp.BookV1(id: "bartleby", title: "Bartleby, the Scrivener", author: "Herman Melville"))
            _ = try await b.sync()
            let partial = try await tabletV1.loadPartial()
            #expect(partial.items.map(\.id) == ["bartleby", "walden"])
            #expect(partial.skipped.map(\.key) == ["moby-dick"])
            #expect(partial.skipped.first?.error.code == .newerItemVersion)
            #expect(partial.skipped.first?.error.itemVersion == 2)
            let loaded = await #expect(throws: RepositoryError.self) { _ = try await tabletV1.load() }
            #expect(loaded?.code == .newerItemVersion && loaded?.key == "moby-dick")
            let item = await #expect(throws: RepositoryError.self) { _ = try await tabletV1.item("moby-dick") }
            #expect(item?.code == .newerItemVersion)

            // A version-1 write over the version-2 record (on purpose: overwrite) is refused by
            // the server as a conflict: the tablet takes the server's value back and keeps its
            // own in the conflict. Nothing is lost, and the older shape never reaches the phone.
            try await tabletV1.save(
                ReadingApp.BookV1(id: "moby-dick", title: "Moby Dick", author: "H. Melville"), onConflict: .overwrite)
            let tabletReport = try await b.sync()
            #expect(tabletReport.newConflicts.map(\.key) == ["moby-dick"])
            #expect(tabletReport.newConflicts.first?.localItemVersion == 1)
            #expect(tabletReport.newConflicts.first?.serverItemVersion == 2)
            let kept = try #require(try await tablet.syncConflicts().first)
            #expect(try JSONDecoder().decode(ReadingApp.BookV1.self, from: try #require(kept.local)).title == "Moby Dick")
            #expect(try await tabletV1.loadPartial().skipped.map(\.key) == ["moby-dick"])

            // The phone pulls the tablet's version-1 Bartleby and migrates it on its own.
            _ = try await a.sync()
            #expect(
                try await phoneV2.load() == [
                    ReadingApp.BookV2(id: "bartleby", title: "Bartleby, the Scrivener", authors: ["Herman Melville"], rating: 0),
                    ReadingApp.BookV2(id: "moby-dick", title: "Moby-Dick", authors: ["Herman Melville"], rating: 4),
                    ReadingApp.BookV2(id: "walden", title: "Walden", authors: ["Henry David Thoreau"], rating: 0),
                ])

            // Now the tablet updates first, straight to version 3, and rates Walden.
            let tabletV3 = ReadingApp.v3(tablet)
            var walden = try #require(try await tabletV3.item("walden"))
            walden.rating = 8
            try await tabletV3.save(walden)
            _ = try await b.sync()

            // The phone (version 2) edits Moby-Dick meanwhile, and pulls the version-3 Walden.
            moby = try #require(try await phoneV2.item("moby-dick"))
            moby.rating = 5
            try await phoneV2.save(moby)
            _ = try await a.sync()
            #expect(try await phoneV2.loadPartial().skipped.map(\.key) == ["walden"])

            // Then the phone updates to version 3 too, and both sync to the end.
            let phoneV3 = ReadingApp.v3(phone)
            _ = try await phoneV3.load()
            _ = try await b.sync()
            _ = try await a.sync()
            _ = try await b.sync()

            let expected = [
                ReadingApp.BookV3(id: "bartleby", title: "Bartleby, the Scrivener", authors: ["Herman Melville"], rating: 0, scale: 10),
                ReadingApp.BookV3(id: "moby-dick", title: "Moby-Dick", authors: ["Herman Melville"], rating: 10, scale: 10),
                ReadingApp.BookV3(id: "walden", title: "Walden", authors: ["Henry David Thoreau"], rating: 8, scale: 10),
            ]
            #expect(try await phoneV3.load() == expected, "each book went through each step once")
            #expect(try await tabletV3.load() == expected)
            #expect(try await phoneV3.loadPartial().isComplete)
            #expect(try await tabletV3.loadPartial().isComplete)
            #expect(try await phone.syncConflicts().isEmpty)
            #expect(try await tablet.syncConflicts().map(\.key) == ["moby-dick"], "the version-1 write is kept")
            #expect(try await phone.syncStatus()?.pendingOperations == 0)
            #expect(try await tablet.syncStatus()?.pendingOperations == 0)
        }
    }
}
