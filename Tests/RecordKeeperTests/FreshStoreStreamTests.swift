import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Streams taken before their store exists (a screen subscribing at an app's first launch)
/// hear every commit from the store's first one on, whoever creates it.
@Suite struct FreshStoreStreamTests {
    /// A store path in a directory that does not exist yet, as an app's support directory
    /// before its first launch.
    static func freshPath(in directory: URL) -> URL {
        directory.appendingPathComponent("Application Support/App/records.sqlite")
    }

    @Test(arguments: StoreKind.allCases)
    func `a stream taken before the store exists hears its first commit and the later ones`(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let url = Self.freshPath(in: directory)
            let store = kind == .onDisk ? RecordStore(url: url) : RecordStore.inMemory()
            let stream = await store.changes(in: "notes")
            try await store.put("notes", key: "first", data: Data("1"))
            #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["first": Data("1")]))
            try await store.apply("notes", changes: RecordChanges(upserts: ["second": Data("2")], removals: ["first"]))
            #expect(
                try await changes(of: stream, until: { !$0.isEmpty })
                    == RecordChanges(upserts: ["second": Data("2")], removals: ["first"]))
        }
    }

    @Test func `taking a stream creates no file, and the stream hears the store being created`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            let stream = await store.changes(in: "notes")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
            try await store.put("notes", key: "first", data: Data("1"))
            #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["first": Data("1")]))
        }
    }

    @Test func `a stream hears another store on the path create the store and its directory`() async throws {
        try await withTemporaryDirectory { directory in
            let url = Self.freshPath(in: directory)
            let observer = RecordStore(url: url)
            let stream = await observer.changes(in: "notes")
            let writer = RecordStore(url: url)
            try await writer.put("notes", key: "first", data: Data("1"))
            try await writer.put("notes", key: "second", data: Data("2"))
            #expect(
                try await changes(of: stream, until: { $0.count >= 2 })
                    == RecordChanges(upserts: ["first": Data("1"), "second": Data("2")]))
            try await writer.apply("notes", changes: RecordChanges(upserts: [:], removals: ["first"]))
            #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: [:], removals: ["first"]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a typed stream taken before the store exists hears the first save`(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let url = Self.freshPath(in: directory)
            let store = kind == .onDisk ? RecordStore(url: url) : RecordStore.inMemory()
            let books = RecordRepository<Book>(store: store, collection: "books")
            let changes = await books.changes()
            try await books.save(Book(id: "a", title: "A"))
            #expect(try await firstElement(of: changes) == RepositoryChange(upserted: [Book(id: "a", title: "A")]))
        }
    }

    @Test func `a stream of a store made of an empty file hears its first commit`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
            let observer = RecordStore(url: url)
            let stream = await observer.changes(in: "notes")
            try await RecordStore(url: url).put("notes", key: "first", data: Data("1"))
            #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["first": Data("1")]))
        }
    }
}
