import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// The load path decodes straight from the statement, looks up records' own item versions
/// only when some record holds one, and keeps the loaded versions as sorted arrays
/// (`KnownVersions`) instead of a dictionary: each of these must give what the plain path gave.
@Suite struct RepositoryLoadPathTests {
    private typealias BookV2 = ReadingApp.BookV2

    private let expected = [
        BookV2(id: "dune", title: "Dune", authors: ["Frank Herbert"], rating: 3),
        BookV2(id: "walden", title: "Walden", authors: ["Thoreau"], rating: 0),
    ]

    @Test(arguments: StoreKind.allCases)
    func `a load gives the same items and save bases whether or not a record holds an item version of its own`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 3) { stores in
            // stores[0] runs version 2 and pulls walden from stores[1], still at version 1;
            // stores[2] holds the same books written at version 2 (no record has a version of its own).
            let server = InMemorySyncServer()
            let syncs = stores.prefix(2).map { RecordSync(store: $0, server: server) }
            for sync in syncs { try await sync.start(space: "alice", collections: ["books"]) }
            try await ReadingApp.v2(stores[0]).save(expected[0])
            try await ReadingApp.v1(stores[1]).save(ReadingApp.BookV1(id: "walden", title: "Walden", author: "Thoreau"))
            for sync in syncs { _ = try await sync.sync() }
            _ = try await syncs[0].sync()
            #expect(try await stores[0].write { try $0.recordItemVersions(of: "books") } == ["walden": 1])
            try await ReadingApp.v2(stores[2]).save(expected)

            for store in [stores[0], stores[2]] {
                let books = ReadingApp.v2(store)
                #expect(try await books.load() == expected)
                #expect(try await books.loadPartial() == PartialLoad(items: expected, skipped: []))
                #expect(try await books.loadIfPresent() == expected)
                // The loaded versions are the base of saves: a loaded item saves, and one
                // changed meanwhile through another repository conflicts.
                var walden = expected[1]
                walden.rating = 4
                try await books.save(walden)
                var dune = expected[0]
                dune.rating = 5
                try await ReadingApp.v2(store).save(dune, onConflict: .overwrite)
                dune.rating = 1
                await #expect(throws: RecordConflict.self) { try await books.save(dune) }
                #expect(try await ReadingApp.v2(store).load().map(\.rating) == [5, 4])
            }
        }
    }

    /// Runs `body` with a version-2 store holding `books` and, pulled from a device running
    /// version 3, the book "solaris" written at item version 3.
    private func withSolarisFromNewerApp(
        _ kind: StoreKind, beside books: [BookV2], _ body: (RecordStore) async throws -> Void
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let syncs = stores.map { RecordSync(store: $0, server: server) }
            for sync in syncs { try await sync.start(space: "alice", collections: ["books"]) }
            try await ReadingApp.v2(stores[0]).save(books)
            try await ReadingApp.v3(stores[1]).save(
                ReadingApp.BookV3(id: "solaris", title: "Solaris", authors: ["Lem"], rating: 8, scale: 10))
            for sync in syncs { _ = try await sync.sync() }
            _ = try await syncs[0].sync()
            try await body(stores[0])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a load names a record of a newer app before an earlier record that does not decode, and so does a point read`(
        kind: StoreKind
    ) async throws {
        try await withSolarisFromNewerApp(kind, beside: [expected[0]]) { store in
            try await store.put("books", key: "anathem", data: Data(#"{"id":"anathem"}"#.utf8))

            let books = ReadingApp.v2(store)
            let error = await #expect(throws: RepositoryError.self) { try await books.load() }
            #expect(error?.code == .newerItemVersion && error?.key == "solaris")
            let partial = try await books.loadPartial()
            #expect(partial.items == [expected[0]])
            #expect(partial.skipped.map(\.key) == ["anathem", "solaris"])
            #expect(partial.skipped.map(\.error.code) == [.undecodableRecord, .newerItemVersion])
            // The same in a window decoded on two threads, one chunk per record (`LoadWindow`).
            let windowed = ReadingApp.v2(store)
            await windowed.useLoadWindow(LoadWindow.Limits(records: 4, bytes: 1 << 20, recordsPerThread: 1, threads: 2))
            let windowedError = await #expect(throws: RepositoryError.self) { try await windowed.load() }
            #expect(windowedError?.code == .newerItemVersion && windowedError?.key == "solaris")
            #expect(try await windowed.loadPartial() == partial)
            // A point read reads the record's own item version by the same statement.
            let pointError = await #expect(throws: RepositoryError.self) { try await books.item("solaris") }
            #expect(pointError?.code == .newerItemVersion && pointError?.itemVersion == 3)
            #expect(try await books.item("dune") == expected[0])
            #expect(try await books.item("missing") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a windowed load names a newer app's record after full windows, before an earlier broken record`(
        kind: StoreKind
    ) async throws {
        let books = (0..<40).map { BookV2(id: String(format: "b%02d", $0), title: "Book \($0)", authors: [], rating: $0 % 5) }
        try await withSolarisFromNewerApp(kind, beside: books) { store in
            try await store.put("books", key: "aaa", data: Data(#"{"id":"aaa"}"#.utf8))  // window 0, chunk 0

            // Windows of 4 records in 4 chunks on two threads: solaris comes after ten full
            // windows, some still decoding when the reader meets it.
            let windowed = ReadingApp.v2(store)
            await windowed.useLoadWindow(LoadWindow.Limits(records: 4, bytes: 1 << 20, recordsPerThread: 1, threads: 2))
            for _ in 0..<3 {
                let error = await #expect(throws: RepositoryError.self) { try await windowed.load() }
                #expect(error?.code == .newerItemVersion && error?.key == "solaris")
                let partial = try await windowed.loadPartial()
                #expect(partial.items == books)
                #expect(partial.skipped.map(\.key) == ["aaa", "solaris"])
                #expect(partial.skipped.map(\.error.code) == [.undecodableRecord, .newerItemVersion])
            }
        }
    }

    @Test func `loaded versions are found by key in and out of key order and after later changes`() {
        let keys = ["a", "b", "é", "k000001", "zz"]
        let versions = (1...5).map { RecordVersion(Int64($0)) }
        for (loadedKeys, loadedVersions) in [(keys, versions), (keys.reversed(), versions.reversed()), ([String](), [RecordVersion]())] {
            var known = KnownVersions(loadedKeys: loadedKeys, versions: loadedVersions)
            for (key, version) in zip(loadedKeys, loadedVersions) { #expect(known[key] == version) }
            #expect(known["e\u{301}"] == (loadedKeys.isEmpty ? nil : RecordVersion(3)), "canonically equal keys match, as in a dictionary")
            #expect(known["c"] == nil && known[""] == nil && known["zzz"] == nil)
            known["c"] = RecordVersion(9)
            known["a"] = nil
            #expect(known["c"] == RecordVersion(9) && known["a"] == nil)
            #expect(Set(known.keys) == Set(loadedKeys).subtracting(["a"]).union(["c"]))
        }
        #expect(KnownVersions().isEmpty)
    }
}
