import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// `RepositoryChange.applied(to:)` keeps a loaded list as `load()` would give it.
@Suite struct RepositoryChangeApplyingTests {
    @Test(arguments: StoreKind.allCases)
    func `a change applied to a loaded list gives what load gives after it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let chapters = RecordRepository<Chapter>(store: store, collection: "chapters")
            try await chapters.save((1...30).map { Chapter(id: $0, title: "\($0)") })
            var shown = try await chapters.load()
            #expect(shown.prefix(4).map(\.id) == [1, 10, 11, 12], "keys sort as strings")
            let stream = await chapters.changes()
            var iterator = stream.makeAsyncIterator()
            try await chapters.save([Chapter(id: 2, title: "two"), Chapter(id: 100, title: "new"), Chapter(id: 0, title: "zero")])
            try await chapters.delete(17)
            while shown != (try await chapters.load()) {
                let change = try #require(try await iterator.next())
                shown = try change.applied(to: shown)
            }
            #expect(shown.map(\.id).contains(100) && !shown.map(\.id).contains(17))
        }
    }

    @Test func `many upserts and removals at once, non-ASCII keys in byte order`() throws {
        let words = ["zebra", "éclair", "apple", "e\u{301}t\u{e9}", "Zoo", "ça"]
        var items = words.map { Book(id: $0, title: $0) }
        items.sort { RecordNames.normalized($0.id).utf8.lexicographicallyPrecedes(RecordNames.normalized($1.id).utf8) }
        var change = RepositoryChange<Book>()
        change.upserted = (0..<40).map { Book(id: "w\($0)", title: "\($0)") } + [Book(id: "apple", title: "APPLE")]
        change.removed = ["zebra", "\u{e9}t\u{e9}", "missing"]
        let applied = try change.applied(to: items)
        let expectedIDs = (items.map(\.id).filter { !["zebra", "e\u{301}t\u{e9}"].contains($0) } + (0..<40).map { "w\($0)" })
            .sorted { RecordNames.normalized($0).utf8.lexicographicallyPrecedes(RecordNames.normalized($1).utf8) }
        #expect(applied.map(\.id) == expectedIDs)
        #expect(applied.first { $0.id == "apple" }?.title == "APPLE")
        var small = RepositoryChange<Book>()
        small.upserted = [Book(id: "b", title: "B")]
        small.removed = ["Zoo"]
        #expect(try small.applied(to: applied).map(\.id) == expectedIDs.filter { $0 != "Zoo" }.inserting("b"))
        let full = RepositoryChange<Book>(upserted: [Book(id: "only", title: "O")], isFullState: true)
        #expect(try full.applied(to: applied) == [Book(id: "only", title: "O")], "a full state replaces the list")
    }
}

extension Array where Element == String {
    fileprivate func inserting(_ key: String) -> [String] {
        (self + [key]).sorted { RecordNames.normalized($0).utf8.lexicographicallyPrecedes(RecordNames.normalized($1).utf8) }
    }
}
