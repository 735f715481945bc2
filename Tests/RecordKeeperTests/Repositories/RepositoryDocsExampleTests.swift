import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// The example of docs/REPOSITORIES.md ("Paste this"), kept compiling and running.
private enum DocsExample {
    struct Book: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var title: String
        var page: Int
    }

    static func readingOnTwoDevices(_ store: RecordStore) async throws -> (conflicts: [String], pages: [Int]) {
        var conflicts: [String] = []
        let phone = RecordRepository<Book>(store: store, collection: "books")
        let tablet = RecordRepository<Book>(store: store, collection: "books")

        try await phone.save(Book(id: "moby-dick", title: "Moby-Dick", page: 1))
        var onTablet = try await tablet.load()[0]
        var onPhone = try await phone.load()[0]

        onPhone.page = 40
        try await phone.save(onPhone)

        onTablet.page = 12
        do {
            try await tablet.save(onTablet)
        } catch let conflict as RecordConflict {
            conflicts = conflict.keys
            guard var latest = try await tablet.item("moby-dick") else { return (conflicts, []) }
            latest.page = max(latest.page, onTablet.page)
            try await tablet.save(latest)
        }
        return (conflicts, try await phone.load().map(\.page))
    }
}

/// The example of docs/REPOSITORIES.md ("Changing your item type"): version 1 and 2 of a Book.
private enum ChangingItemTypeExample {
    enum Version1 {
        struct Book: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var title: String
            var author: String
        }
    }

    enum Version2 {
        struct Book: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var title: String
            var authors: [String]
            var rating: Int
        }

        static func openBooks(in store: RecordStore) -> RecordRepository<Book> {
            RecordRepository<Book>(
                store: store, collection: "books", itemVersion: 2,
                migrations: [
                    .json(from: 1) { book in  // the stored JSON of one version 1 book
                        book["authors"] = [book["author"] ?? ""]
                        book["author"] = nil
                        book["rating"] = 0
                    }
                ])
        }
    }
}

@Suite struct RepositoryDocsExampleTests {
    @Test(arguments: StoreKind.allCases)
    func `the documented item type change migrates books saved by version 1`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let version1 = RecordRepository<ChangingItemTypeExample.Version1.Book>(store: store, collection: "books")
            try await version1.save([
                .init(id: "dune", title: "Dune", author: "Frank Herbert"),
                .init(id: "emma", title: "Emma", author: "Jane Austen"),
            ])

            let books = ChangingItemTypeExample.Version2.openBooks(in: store)
            let all = try await books.load()
            #expect(all == [
                .init(id: "dune", title: "Dune", authors: ["Frank Herbert"], rating: 0),
                .init(id: "emma", title: "Emma", authors: ["Jane Austen"], rating: 0),
            ])
            #expect(try await store.itemVersion(of: "books") == 2)
            await #expect(throws: RepositoryError.self, "version 1 now refuses the newer books") {
                try await version1.load()
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the documented two-device example conflicts once and keeps the merged page`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let (conflicts, pages) = try await DocsExample.readingOnTwoDevices(store)
            #expect(conflicts == ["moby-dick"])
            #expect(pages == [40])
        }
    }
}
