public import RecordKeeper

/// The learner's data in memory, for tests and previews: ``RecordKeeperLearnerRepository`` on
/// an in-memory store (`RecordStore.inMemory()`), so it runs the same engine, the same narrow
/// saves and the same conflict checks as the app on disk, and cannot drift from it. It can be
/// made to fail, to show how the app behaves when storage is down.
public actor InMemoryLearnerRepository: LearnerRepository {
    private let records: RecordKeeperLearnerRepository
    private var failure: (any Error)?

    /// An empty repository.
    public init() {
        records = RecordKeeperLearnerRepository(store: .inMemory())
    }

    /// The in-memory store holding the records (to watch what a command writes).
    public nonisolated var store: RecordStore { records.store }

    /// Makes every later call throw `error` (nil: work again).
    public func setFailure(_ error: (any Error)?) { failure = error }

    public func books() async throws -> [Book] {
        try check()
        return try await records.books()
    }

    public func book(_ id: Book.ID) async throws -> Book? {
        try check()
        return try await records.book(id)
    }

    public func save(_ book: Book) async throws {
        try check()
        try await records.save(book)
    }

    public func positions() async throws -> [ReadingPosition] {
        try check()
        return try await records.positions()
    }

    public func position(in bookID: Book.ID) async throws -> ReadingPosition? {
        try check()
        return try await records.position(in: bookID)
    }

    public func save(_ position: ReadingPosition) async throws {
        try check()
        try await records.save(position)
    }

    public func words() async throws -> [Word] {
        try check()
        return try await records.words()
    }

    public func word(_ id: Word.ID) async throws -> Word? {
        try check()
        return try await records.word(id)
    }

    public func wordsDue(count: Int) async throws -> [Word] {
        try check()
        return try await records.wordsDue(count: count)
    }

    public func wordCount() async throws -> Int {
        try check()
        return try await records.wordCount()
    }

    public func save(_ words: [Word]) async throws {
        try check()
        try await records.save(words)
    }

    @discardableResult
    public func removeWord(_ id: Word.ID) async throws -> Bool {
        try check()
        return try await records.removeWord(id)
    }

    private func check() throws {
        if let failure { throw failure }
    }
}
