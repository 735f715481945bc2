import Foundation
import TestHelpers
@testable import RecordKeeper

/// What `format-8.sqlite` holds: `books` of the reading app at item version 2 on this device,
/// with values pulled from devices at versions 1 and 3 (`ReadingApp`).
enum FormatEightFixture {
    /// Dune as this device rated it, pending (not pushed) when the fixture was written.
    static let localDune = ReadingApp.BookV2(id: "dune", title: "Dune", authors: ["Frank Herbert"], rating: 5)
}

extension FixtureWriters {
    /// `format-8.sqlite` (format 8, item versions of synced payloads), synced with space
    /// `alice` through an in-memory server: this device's `books` at item version 2 (the
    /// migrated books of the reading app, pushed), then
    /// - `walden`, pulled from a device still at version 1 (`sync_records.item_version` 1);
    /// - `solaris`, pulled from a device at version 3 (`item_version` 3);
    /// - `dune` changed here (pending, captured at item version 2) while the version-3 device
    ///   changed it too: its value kept aside with `aside_item_version` 3.
    static func writeFormat8(to url: URL) async throws {
        let server = InMemorySyncServer()
        let store = RecordStore(url: url)
        let books = ReadingApp.v2(store)
        try await books.save(ReadingApp.migratedBooks)
        let sync = RecordSync(store: store, server: server)
        try await sync.start(space: "alice", collections: ["books"])
        _ = try await sync.sync()

        let older = RecordStore.inMemory()
        let olderSync = RecordSync(store: older, server: server)
        try await olderSync.start(space: "alice", collections: ["books"])
        _ = try await olderSync.sync()
        try await ReadingApp.v1(older).save(ReadingApp.BookV1(id: "walden", title: "Walden", author: "Henry David Thoreau"))
        _ = try await olderSync.sync()

        let newer = RecordStore.inMemory()
        let newerSync = RecordSync(store: newer, server: server)
        try await newerSync.start(space: "alice", collections: ["books"])
        _ = try await newerSync.sync()
        let newerBooks = ReadingApp.v3(newer)
        var dune = try await newerBooks.item("dune")
        dune?.rating = 9
        if let dune { try await newerBooks.save(dune) }
        try await newerBooks.save(
            ReadingApp.BookV3(id: "solaris", title: "Solaris", authors: ["Stanisław Lem"], rating: 8, scale: 10))

        try await books.save(FormatEightFixture.localDune)
        _ = try await newerSync.sync()
        _ = try await sync.pull()
        await store.close()
    }
}
