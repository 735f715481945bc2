import Foundation
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

@Suite struct RepositoryDocsExampleTests {
    @Test(arguments: StoreKind.allCases)
    func `the documented two-device example conflicts once and keeps the merged page`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let (conflicts, pages) = try await DocsExample.readingOnTwoDevices(store)
            #expect(conflicts == ["moby-dick"])
            #expect(pages == [40])
        }
    }
}
