import Foundation
import RecordKeeperFeatures

/// The commands that use the store. Each shows what it reads through a ``FeatureModel``
/// (its `LoadState` decides what is printed) and changes data through the model's actions,
/// so a failed read or a failed save is reported, never shown as "nothing saved".
@MainActor
struct LearnerCommands {
    static let names: Set<String> = ["read", "words", "status"]

    let repository: any LearnerRepository
    let arguments: LearnerArguments
    var console: Console

    init(repository: any LearnerRepository, arguments: LearnerArguments, console: Console) {
        self.repository = repository
        self.arguments = arguments
        self.console = console
    }

    mutating func run(_ command: String) async throws {
        switch command {
        case "read": try await read()
        case "status": try await status()
        default: try await words()
        }
    }

    // MARK: read

    private mutating func read() async throws {
        try expectWords(2, usage: "read BOOK [--page N] [--title TEXT]")
        try allowOptions(["page", "title"])
        let bookID = try Self.slug(arguments.words[1])
        let page = try arguments.positiveInteger("page")
        let title = try arguments.values["title"].map { text throws(LearnerError) in try Self.title(text) }
        if page == nil, title != nil { throw LearnerError(.usage, "--title goes with --page") }
        let repository = repository
        let model = FeatureModel<Reading>(load: {
            Reading(book: try await repository.book(bookID), position: try await repository.position(in: bookID))
        })
        await model.refresh()
        let before = try loaded(model, reading: "your place in \(bookID)")

        guard let page else {
            if let position = before.position {
                console.print("\(before.book?.title ?? Book.title(fromSlug: bookID)): page \(position.page) (\(Self.day(position.updatedAt)))")
            } else {
                console.print("You have not started \(bookID). Record a page: learner read \(bookID) --page 1")
            }
            return
        }
        let now = Date()
        await model.perform("save your place in \(bookID)") {
            let stored = try await repository.book(bookID)
            if stored == nil || (title != nil && stored?.title != title) {
                try await repository.save(Book(id: bookID, title: title ?? stored?.title))
            }
            try await repository.save(ReadingPosition(bookID: bookID, page: page, updatedAt: now))
        }
        try reportFailure(model)
        let after = readBack(model, reading: "your place in \(bookID)")
        var line = "\(after?.book?.title ?? title ?? before.book?.title ?? bookID): page \(after?.position?.page ?? page)"
        if let previous = before.position, previous.page != page { line += " (was page \(previous.page))" }
        console.print(line)
    }

    /// What `read` shows about one book.
    struct Reading: Sendable {
        var book: Book?
        var position: ReadingPosition?
    }

    // MARK: words

    private mutating func words() async throws {
        let subcommand = arguments.words.count > 1 ? arguments.words[1] : ""
        let repository = repository
        let model = FeatureModel<[Word]>(load: { try await repository.words() })
        switch subcommand {
        case "add":
            try expectWords(4, usage: "words add WORD TRANSLATION")
            try allowOptions([])
            let id = try Self.word(arguments.words[2])
            let translation = try Self.translation(arguments.words[3])
            await model.refresh()
            let before = try loaded(model, reading: "your words")
            let now = Date()
            await model.perform("add the word \(id)") {
                var word = try await repository.word(id) ?? Word(id: id, translation: translation, addedAt: now)
                word.translation = translation
                try await repository.save([word])
            }
            try reportFailure(model)
            let after = readBack(model, reading: "your words")
            if let previous = before.first(where: { $0.id == id }) {
                console.print(previous.translation == translation
                    ? "\(id) → \(translation) was already there."
                    : "Changed \(id) → \(translation) (was \(previous.translation)).")
            } else {
                console.print("Added \(id) → \(translation).")
            }
            if let after { console.print("You have \(after.count) word\(after.count == 1 ? "" : "s").") }

        case "review":
            try expectWords(2, usage: "words review [--count N]")
            try allowOptions(["count"])
            let count = try arguments.positiveInteger("count") ?? 5
            // The words due, by a query (not a load of every word), and how many there are.
            let dueModel = FeatureModel<(due: [Word], total: Int)>(load: {
                (try await repository.wordsDue(count: count), try await repository.wordCount())
            })
            await dueModel.refresh()
            let (due, total) = try loaded(dueModel, reading: "your words")
            guard !due.isEmpty else {
                console.print("No words yet. Add one: learner words add ballena whale")
                return
            }
            for word in due { console.print("\(word.id) → \(word.translation)") }
            let now = Date()
            let reviewed = due.map { word in
                var word = word
                word.reviewCount += 1
                word.lastReviewedAt = now
                return word
            }
            // The due model's refresh afterwards runs the query again: only the words due decode.
            await dueModel.perform("record the review") { try await repository.save(reviewed) }
            try reportFailure(dueModel)
            console.print("Reviewed \(reviewed.count) of \(total) word\(total == 1 ? "" : "s").")

        case "list":
            try expectWords(2, usage: "words list")
            try allowOptions([])
            await model.refresh()
            let all = try loaded(model, reading: "your words")
            if all.isEmpty { console.print("No words yet. Add one: learner words add ballena whale") }
            for word in all {
                console.print("\(word.id) → \(word.translation) (reviewed \(word.reviewCount) time\(word.reviewCount == 1 ? "" : "s"))")
            }

        case "remove":
            try expectWords(3, usage: "words remove WORD")
            try allowOptions([])
            let id = try Self.word(arguments.words[2])
            // Counted, not loaded: a word whose record no longer decodes can still be removed,
            // and no other word is decoded for it.
            let countModel = FeatureModel<Int>(load: { try await repository.wordCount() })
            await countModel.perform("remove the word \(id)") {
                guard try await repository.removeWord(id) else {
                    throw LearnerError(.notFound, "there is no word '\(id)'")
                }
            }
            try reportFailure(countModel)
            console.print("Removed \(id).")
            if let left = readBack(countModel, reading: "your words") {
                console.print("You have \(left) word\(left == 1 ? "" : "s").")
            }

        default:
            throw LearnerError(.usage, subcommand.isEmpty
                ? "words needs add, review, list or remove"
                : "unknown words command '\(subcommand)' (add, review, list, remove)")
        }
    }

    // MARK: status

    private mutating func status() async throws {
        try expectWords(1, usage: "status")
        try allowOptions([])
        let repository = repository
        let model = FeatureModel<LearnerStatus>(load: { try await LearnerStatus.load(from: repository) })
        await model.refresh()
        let status = try loaded(model, reading: "your progress")
        guard !status.isEmpty else {
            console.print("Nothing saved yet. Start with: learner read moby-dick --page 1")
            return
        }
        let titles = Dictionary(status.books.map { ($0.id, $0.title) }, uniquingKeysWith: { first, _ in first })
        if !status.positions.isEmpty {
            console.print("Reading:")
            for position in status.positions {
                console.print("  \(titles[position.id] ?? position.id): page \(position.page) (\(Self.day(position.updatedAt)))")
            }
        }
        let fresh = status.words.filter { $0.reviewCount == 0 }.count
        console.print("Words: \(status.words.count) (\(fresh) never reviewed)")
        let next = Word.dueForReview(status.words, count: 3).map(\.id)
        if !next.isEmpty { console.print("Next to review: \(next.joined(separator: ", "))") }
    }

    // MARK: Helpers

    /// The loaded content, or the model's failure as an error naming what could not be read.
    private func loaded<Value>(_ model: FeatureModel<Value>, reading what: String) throws -> Value {
        switch model.state {
        case .loaded(let value):
            return value
        case .failed(let error, _):
            throw LearnerError(LearnerError.exitCode(for: error), "could not read \(what): \(LearnerError.describe(error))")
        case .idle, .loading:
            throw LearnerError(.internalError, "\(what) was not loaded")
        }
    }

    /// The content loaded after a change that was saved, or nil with a warning on stderr: the
    /// change is kept, so the command still succeeds (run again, it would change nothing).
    private mutating func readBack<Value>(_ model: FeatureModel<Value>, reading what: String) -> Value? {
        do {
            return try loaded(model, reading: what)
        } catch {
            console.printError("learner: saved, but \(LearnerError.describe(error))")
            return nil
        }
    }

    /// Throws the model's action failure, if its last action failed, described for a person
    /// (a conflict says to run the command again, not to merge).
    private func reportFailure<Value>(_ model: FeatureModel<Value>) throws {
        guard let failure = model.actionFailure else { return }
        let message = "Could not \(failure.action): " + LearnerError.describe(failure.error)
        throw LearnerError(LearnerError.exitCode(for: failure.error), message)
    }

    private func expectWords(_ count: Int, usage: String) throws(LearnerError) {
        guard arguments.words.count == count else { throw LearnerError(.usage, "usage: learner \(usage)") }
    }

    private func allowOptions(_ names: Set<String>) throws(LearnerError) {
        for name in arguments.values.keys where name != "store" && !names.contains(name) {
            throw LearnerError(.usage, "option --\(name) does not go with this command")
        }
    }

    static func slug(_ text: String) throws(LearnerError) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_.")
        let slug = text.lowercased()
        guard !slug.isEmpty, slug.count <= 100, slug.allSatisfy(allowed.contains), slug != ".", slug != ".." else {
            throw LearnerError(.usage, "a book is a short slug of letters, digits, '-', '_' and '.', such as moby-dick; not '\(text)'")
        }
        return slug
    }

    static func word(_ text: String) throws(LearnerError) -> String {
        let word = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard !word.isEmpty, word.count <= 100, !hasControlCharacters(word) else {
            throw LearnerError(.usage, "a word is 1 to 100 characters without control characters")
        }
        return word
    }

    static func translation(_ text: String) throws(LearnerError) -> String {
        let translation = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !translation.isEmpty, translation.count <= 200, !hasControlCharacters(translation) else {
            throw LearnerError(.usage, "a translation is 1 to 200 characters on one line, without control characters")
        }
        return translation
    }

    /// A book's title as given by `--title`: printed on one line wherever the book is.
    static func title(_ text: String) throws(LearnerError) -> String {
        let title = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty, title.count <= 200, !hasControlCharacters(title) else {
            throw LearnerError(.usage, "a title is 1 to 200 characters on one line, without control characters")
        }
        return title
    }

    private static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: date)
    }
}
