import Foundation
import TestHelpers
import Testing
@testable import LearnerKit
@testable import RecordKeeper

/// The app's commands on the in-memory repository, and its RecordKeeper repository's narrow
/// saves on both kinds of store.
@Suite struct LearnerAppTests {
    struct StorageDown: Error, LocalizedError {
        var errorDescription: String? { "the disk went away" }
    }

    @MainActor
    func run(_ arguments: [String], on repository: any LearnerRepository) async -> Learner.Run {
        await Learner.execute(arguments: arguments, environment: [:], repository: repository)
    }

    @Test @MainActor func `commands record and show progress through the in-memory repository`() async throws {
        let repository = InMemoryLearnerRepository()
        #expect(await run(["status"], on: repository).output.contains("Nothing saved yet"))
        #expect(await run(["read", "moby-dick", "--page", "12", "--title", "Moby-Dick"], on: repository).output
                == "Moby-Dick: page 12\n")
        #expect(await run(["words", "add", "Ballena", "whale"], on: repository).output == "Added ballena → whale.\nYou have 1 word.\n")
        #expect(await run(["words", "add", "ballena", "a whale"], on: repository).output.hasPrefix("Changed ballena → a whale (was whale)."))
        #expect(try await repository.books() == [Book(id: "moby-dick", title: "Moby-Dick")])
        #expect(try await repository.position(in: "moby-dick")?.page == 12)
        #expect(try await repository.word("ballena")?.translation == "a whale")

        let removed = await run(["words", "remove", "gato"], on: repository)
        #expect(removed.status == 66)
        #expect(removed.errors == "learner: Could not remove the word gato: there is no word 'gato'\n")
    }

    @Test func `a conflict tells the person to run the command again, not to merge`() {
        let conflict = RecordConflict(
            collection: "words", currentVersions: ["ballena": RecordVersion(3)], expectedVersions: ["ballena": RecordVersion(2)],
            action: .save)
        let text = LearnerError.describe(conflict)
        #expect(text.hasSuffix("Run the command again."), "\(text)")
        #expect(!text.contains("merge"), "\(text)")
        #expect(LearnerError.exitCode(for: conflict) == .conflict)
    }

    @Test @MainActor func `a review saves only the words it showed`() async throws {
        let repository = InMemoryLearnerRepository()
        for (word, translation) in [("uno", "one"), ("dos", "two"), ("tres", "three")] {
            #expect(await run(["words", "add", word, translation], on: repository).status == 0)
        }
        var written = await repository.store.changes(in: "words").makeAsyncIterator()
        let review = await run(["words", "review", "--count", "2"], on: repository)
        #expect(review.output == "uno → one\ndos → two\nReviewed 2 of 3 words.\n")
        let change = try #require(await written.next())
        #expect(Set(change.upserts.keys) == ["uno", "dos"])
        #expect(change.removals.isEmpty)
        #expect(try await repository.word("tres")?.reviewCount == 0)
        // Next time the word never reviewed comes first.
        #expect(await run(["words", "review", "--count", "1"], on: repository).output.hasPrefix("tres → three\n"))
    }

    @Test func `the in-memory repository refuses an overwrite of another writer's change, as on disk`() async throws {
        let repository = InMemoryLearnerRepository()
        let now = Date(timeIntervalSinceReferenceDate: 0)
        try await repository.save([Word(id: "uno", translation: "one", addedAt: now)])
        var stale = try #require(try await repository.word("uno"))
        let other = RecordKeeperLearnerRepository(store: repository.store)
        var changed = try #require(try await other.word("uno"))
        changed.translation = "one (changed elsewhere)"
        try await other.save([changed])

        stale.reviewCount += 1
        await #expect(throws: RecordConflict.self) { try await repository.save([stale]) }
        #expect(try await repository.word("uno")?.translation == "one (changed elsewhere)")
    }

    @Test @MainActor func `when storage is down commands fail honestly and help still works`() async throws {
        let repository = InMemoryLearnerRepository()
        #expect(await run(["words", "add", "uno", "one"], on: repository).status == 0)
        await repository.setFailure(StorageDown())

        let status = await run(["status"], on: repository)
        #expect(status.status != 0)
        #expect(status.output.isEmpty)
        #expect(status.errors == "learner: could not read your progress: the disk went away\n")
        let add = await run(["words", "add", "dos", "two"], on: repository)
        #expect(add.status != 0)
        #expect(add.errors.contains("the disk went away"))
        #expect(await run(["--help"], on: repository).status == 0)
        #expect(await run(["--version"], on: repository).status == 0)

        await repository.setFailure(nil)
        #expect(try await repository.words().map(\.id) == ["uno"])  // nothing reset, nothing half-written
    }

    @Test(arguments: StoreKind.allCases)
    func `updating one word through RecordKeeper never rewrites the others`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let repository = RecordKeeperLearnerRepository(store: store)
            let now = Date(timeIntervalSinceReferenceDate: 0)
            try await repository.save([Word(id: "uno", translation: "one", addedAt: now),
                                       Word(id: "dos", translation: "two", addedAt: now)])
            let before = try #require(try await store.record("words", key: "dos"))
            let changes = await store.changes(in: "words")

            var uno = try #require(try await repository.word("uno"))
            uno.reviewCount += 1
            try await repository.save([uno])
            var iterator = changes.makeAsyncIterator()
            let change = try #require(await iterator.next())
            #expect(Set(change.upserts.keys) == ["uno"])
            #expect(change.removals.isEmpty)
            #expect(try await store.record("words", key: "dos") == before)

            try await repository.save(ReadingPosition(bookID: "moby-dick", page: 3, updatedAt: now))
            #expect(try await repository.words().count == 2)
        }
    }

    @Test func `reading a store that does not exist yet answers empty and creates nothing`() async throws {
        try await withTemporaryDirectory { directory async throws in
            let url = directory.appendingPathComponent("sub/learner.sqlite")
            let repository = RecordKeeperLearnerRepository(store: RecordStore(url: url))
            #expect(try await repository.words().isEmpty)
            #expect(try await repository.position(in: "moby-dick") == nil)
            #expect(try await LearnerStatus.load(from: repository).isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    @Test func `the store location is --store, then LEARNER_STORE, then the XDG or home data directory`() throws {
        #expect(try StoreLocation.resolve(option: "/a.sqlite", environment: ["LEARNER_STORE": "/b.sqlite"]).path == "/a.sqlite")
        #expect(try StoreLocation.resolve(option: nil, environment: ["LEARNER_STORE": "/b.sqlite", "XDG_DATA_HOME": "/x"]).path
                == "/b.sqlite")
        // XDG_DATA_HOME on every platform (macOS too), then the platform's own directory.
        #expect(try StoreLocation.resolve(option: nil, environment: ["XDG_DATA_HOME": "/x", "HOME": "/h"]).path
                == "/x/learner/learner.sqlite")
        #if !canImport(Darwin)
            #expect(try StoreLocation.resolve(option: nil, environment: ["XDG_DATA_HOME": "relative", "HOME": "/h"]).path
                    == "/h/.local/share/learner/learner.sqlite")
            #expect(throws: LearnerError.self) { try StoreLocation.resolve(option: nil, environment: [:]) }
        #endif
        #expect(throws: LearnerError.self) { try StoreLocation.resolve(option: "", environment: [:]) }
        #expect(throws: LearnerError.self) { try StoreLocation.resolve(option: nil, environment: ["LEARNER_STORE": ""]) }
    }

    @Test func `the argument parser takes options anywhere, inline values, and -- before words`() throws {
        let parsed = try LearnerArguments.parse(["read", "--page=12", "moby-dick", "--store", "s.sqlite", "--", "--odd"])
        #expect(parsed.words == ["read", "moby-dick", "--odd"])
        #expect(parsed.values == ["page": "12", "store": "s.sqlite"])
        #expect(try parsed.positiveInteger("page") == 12)
        #expect(throws: LearnerError.self) { try LearnerArguments.parse(["status", "--nope"]) }
        #expect(throws: LearnerError.self) { try LearnerArguments.parse(["read", "x", "--page"]) }
        #expect(throws: LearnerError.self) { try LearnerArguments.parse(["--help=yes"]) }
        #expect(throws: LearnerError.self) { try LearnerArguments.parse(["read", "x", "--page", "-3"]).positiveInteger("page") }
        let twice = #expect(throws: LearnerError.self) { try LearnerArguments.parse(["read", "x", "--page", "5", "--page=6"]) }
        #expect(twice?.message == "option --page is given twice; give it once")
        let large = #expect(throws: LearnerError.self) {
            try LearnerArguments.parse(["read", "x", "--page", "99999999999999999999"]).positiveInteger("page")
        }
        #expect(large?.message == "--page 99999999999999999999 is too large; the largest is \(Int.max)")
        let zero = #expect(throws: LearnerError.self) { try LearnerArguments.parse(["read", "x", "--page", "000"]).positiveInteger("page") }
        #expect(zero?.message == "--page needs a positive whole number, not '000'")
    }

    @Test @MainActor func `a translation or title on more than one line is refused and nothing is saved`() async throws {
        let repository = InMemoryLearnerRepository()
        let translation = await run(["words", "add", "ballena", "whale\nsecond line"], on: repository)
        #expect(translation.status == 64)
        #expect(translation.errors.contains("a translation is 1 to 200 characters on one line"))
        let title = await run(["read", "moby-dick", "--page", "3", "--title", "Moby\nDick"], on: repository)
        #expect(title.status == 64)
        #expect(title.errors.contains("a title is 1 to 200 characters on one line"))
        let empty = await run(["read", "moby-dick", "--page", "3", "--title", "  "], on: repository)
        #expect(empty.status == 64)
        #expect(try await repository.words().isEmpty)
        #expect(try await repository.books().isEmpty)
        #expect(try await repository.position(in: "moby-dick") == nil)
    }
}
