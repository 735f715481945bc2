import Foundation
import TestHelpers
import Testing
@testable import LearnerKit
@testable import RecordKeeper

/// What `learner` says and writes when something goes wrong around a change: a conflict met by
/// a real command, a read after a saved change that fails, a word whose record no longer
/// decodes, and command lines that are wrong before any storage is touched.
@Suite struct LearnerFailureTests {
    /// The learner's repository on an in-memory store, with hooks: `beforeWordsSave` runs
    /// before each save of words; once `failReadsAfterSave` is set, reads fail after the next
    /// save; `wordLoads` counts loads of every word.
    actor ScriptedRepository: LearnerRepository {
        struct ReadFailed: Error, LocalizedError {
            var errorDescription: String? { "the read went wrong" }
        }

        let records: RecordKeeperLearnerRepository
        var beforeWordsSave: (@Sendable () async throws -> Void)?
        var failReadsAfterSave = false
        private var saved = false
        private(set) var wordLoads = 0

        init(store: RecordStore = .inMemory(), failingReadsAfterSave: Bool = false) {
            records = RecordKeeperLearnerRepository(store: store)
            failReadsAfterSave = failingReadsAfterSave
        }

        func setBeforeWordsSave(_ hook: (@Sendable () async throws -> Void)?) { beforeWordsSave = hook }
        func setFailReadsAfterSave() { failReadsAfterSave = true }

        private func read() throws {
            if failReadsAfterSave, saved { throw ReadFailed() }
        }

        func books() async throws -> [Book] { try read(); return try await records.books() }
        func book(_ id: Book.ID) async throws -> Book? { try read(); return try await records.book(id) }
        func save(_ book: Book) async throws { try await records.save(book); saved = true }
        func positions() async throws -> [ReadingPosition] { try read(); return try await records.positions() }
        func position(in bookID: Book.ID) async throws -> ReadingPosition? {
            try read()
            return try await records.position(in: bookID)
        }
        func save(_ position: ReadingPosition) async throws { try await records.save(position); saved = true }
        func words() async throws -> [Word] {
            try read()
            wordLoads += 1
            return try await records.words()
        }
        func word(_ id: Word.ID) async throws -> Word? { try read(); return try await records.word(id) }
        func save(_ words: [Word]) async throws {
            try await beforeWordsSave?()
            try await records.save(words)
            saved = true
        }
        func removeWord(_ id: Word.ID) async throws -> Bool {
            let removed = try await records.removeWord(id)
            saved = true
            return removed
        }
        func wordsDue(count: Int) async throws -> [Word] { try read(); return try await records.wordsDue(count: count) }
        func wordCount() async throws -> Int { try read(); return try await records.wordCount() }
    }

    @MainActor
    func run(_ arguments: [String], on repository: any LearnerRepository) async -> Learner.Run {
        await Learner.execute(arguments: arguments, environment: [:], repository: repository)
    }

    @Test @MainActor func `a conflict met by a command tells the person to run it again, not to merge`() async throws {
        let repository = ScriptedRepository()
        #expect(await run(["words", "add", "ballena", "whale"], on: repository).status == 0)
        let other = RecordKeeperLearnerRepository(store: repository.records.store)
        await repository.setBeforeWordsSave {
            var word = try #require(try await other.word("ballena"))
            word.translation = "changed elsewhere"
            try await other.save([word])
        }

        let add = await run(["words", "add", "ballena", "a whale"], on: repository)
        #expect(add.status == 75)
        #expect(add.errors.hasPrefix("learner: Could not add the word ballena: "), "\(add.errors)")
        #expect(add.errors.hasSuffix("Run the command again.\n"), "\(add.errors)")
        #expect(!add.errors.contains("merge"), "\(add.errors)")
        #expect(try await other.word("ballena")?.translation == "changed elsewhere")
    }

    @Test @MainActor func `a change that was saved succeeds even when reading it back fails`() async throws {
        let repository = ScriptedRepository()
        await repository.setFailReadsAfterSave()

        let add = await run(["words", "add", "ballena", "whale"], on: repository)
        #expect(add.status == 0, "the word was saved: \(add.errors)")
        #expect(add.output == "Added ballena → whale.\n")
        #expect(add.errors == "learner: saved, but could not read your words: the read went wrong\n")
        #expect(try await repository.records.word("ballena")?.translation == "whale")

        let read = await run(["read", "moby-dick", "--page", "7", "--title", "Moby-Dick"], on: ScriptedRepository(failingReadsAfterSave: true))
        #expect(read.status == 0, "\(read.errors)")
        #expect(read.output == "Moby-Dick: page 7\n")
        #expect(read.errors.hasPrefix("learner: saved, but could not read your place in moby-dick"))
    }

    @Test @MainActor func `a word whose record no longer decodes can be removed`() async throws {
        let repository = ScriptedRepository()
        #expect(await run(["words", "add", "uno", "one"], on: repository).status == 0)
        try await repository.records.store.put("words", key: "gato", data: Data(#"{"id":"gato","translation":5}"#.utf8))
        #expect(await run(["words", "list"], on: repository).status == 65, "listing still names the bad record")
        let loads = await repository.wordLoads

        let removed = await run(["words", "remove", "gato"], on: repository)
        #expect(removed.status == 0, "\(removed.errors)")
        #expect(removed.output == "Removed gato.\nYou have 1 word.\n")
        #expect(try await repository.records.store.value("words", key: "gato") == nil)
        #expect(try await repository.records.word("uno") != nil, "the other word stays")

        let missing = await run(["words", "remove", "gato"], on: repository)
        #expect(missing.status == 66)
        #expect(missing.errors == "learner: Could not remove the word gato: there is no word 'gato'\n")
        #expect(await repository.wordLoads == loads, "removing loads no word")
    }

    @Test @MainActor func `a review reads only the words it shows, before and after saving`() async throws {
        let repository = ScriptedRepository()
        for (word, translation) in [("uno", "one"), ("dos", "two"), ("tres", "three")] {
            #expect(await run(["words", "add", word, translation], on: repository).status == 0)
        }
        let loadsBefore = await repository.wordLoads
        let review = await run(["words", "review", "--count", "2"], on: repository)
        #expect(review.output == "uno → one\ndos → two\nReviewed 2 of 3 words.\n")
        #expect(await repository.wordLoads == loadsBefore, "no load of every word")
    }

    @Test @MainActor func `a title without a page is a usage error before the store is read`() async throws {
        let repository = InMemoryLearnerRepository()
        await repository.setFailure(ScriptedRepository.ReadFailed())
        let read = await run(["read", "moby-dick", "--title", "Moby-Dick"], on: repository)
        #expect(read.status == 64)
        #expect(read.errors.hasPrefix("learner: --title goes with --page\n"))
    }

    @Test func `an option given without its value does not take the next option as one`() throws {
        let swallowed = #expect(throws: LearnerError.self) { try LearnerArguments.parse(["words", "add", "hola", "hi", "--store", "--help"]) }
        #expect(swallowed?.message == "option --store needs a value, not the option --help; write --store=--help for a value beginning with --")
        #expect(throws: LearnerError.self) { try LearnerArguments.parse(["read", "x", "--title", "--page", "3"]) }
        #expect(throws: LearnerError.self) { try LearnerArguments.parse(["status", "--store", "-h"]) }
        #expect(try LearnerArguments.parse(["read", "x", "--page", "3", "--title=--odd"]).values["title"] == "--odd")
        #expect(try LearnerArguments.parse(["read", "x", "--page", "3", "--title", "-odd"]).values["title"] == "-odd")
    }
}
