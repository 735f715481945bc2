import Foundation
import Testing
@testable import RecordKeeper
@testable import RecordKeeperFeatures
import TestHelpers

/// A model whose content is a query of its repository: a live list that every writer's commit
/// to the collection brings up to date.
@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(3)))
struct FeatureModelQueryTests {
    struct Chore: Codable, Identifiable, Equatable, Sendable, Queryable {
        var id: String
        var rank: Int
        static let rank = Field<Chore, Int>("rank")
        static let queryFields: [any QueryField] = [rank]
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a model of a query shows its items and follows every writer's commits`(kind: StoreKind) async throws {
        try await withStore(kind) { store, url in
            let chores = RecordRepository<Chore>(store: store, collection: "chores")
            try await chores.save((1...5).map { Chore(id: "c\($0)", rank: $0) })
            try await chores.declareIndexes([Chore.rank])
            let top = FeatureModel(repository: chores, where: Chore.rank >= 3, orderBy: [Chore.rank.descending], limit: 2)
            await top.follow(chores)
            await top.refresh()
            #expect(top.content?.map(\.id) == ["c5", "c4"])

            // Another store on the same file (the same store when in memory) writes.
            let writer = RecordRepository<Chore>(store: kind == .onDisk ? RecordStore(url: url) : store, collection: "chores")
            try await writer.save(Chore(id: "c9", rank: 9))
            await waitUntilObserved { top.content?.map(\.id) == ["c9", "c5"] }
            // A change outside what the query selects leaves the list as it is.
            try await writer.save(Chore(id: "c0", rank: 0))
            _ = try await writer.load()
            try await writer.delete("c9")
            await waitUntilObserved { top.content?.map(\.id) == ["c5", "c4"] }
        }
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a followed change leaves the versions a save is based on, and a refresh moves them on`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let chores = RecordRepository<Chore>(store: store, collection: "chores")
            try await chores.save((1...3).map { Chore(id: "c\($0)", rank: $0) })
            let top = FeatureModel(repository: chores, where: Chore.rank >= 2, orderBy: [Chore.rank.descending])
            await top.follow(chores)
            await top.refresh()
            let stale = try #require(top.content?.first { $0.id == "c2" })

            let other = RecordRepository<Chore>(store: store, collection: "chores")
            var theirs = try #require(try await other.item("c2"))
            theirs.rank = 20
            try await other.save(theirs)
            await waitUntilObserved { top.content?.first == theirs }
            // The model shows the other writer's change, but a save of the copy read before it
            // still conflicts with it.
            await #expect(throws: RecordConflict.self) { try await chores.save(Chore(id: stale.id, rank: 7)) }

            await top.refresh()
            try await chores.save(Chore(id: "c2", rank: 7))
            #expect(try await other.item("c2")?.rank == 7)
        }
    }
}

