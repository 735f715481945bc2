/// The learner's data in memory, for tests and previews. It can be made to fail, to show how
/// the app behaves when storage is down.
public actor InMemoryLearnerRepository: LearnerRepository {
    private var bookTable: [Book.ID: Book] = [:]
    private var positionTable: [Book.ID: ReadingPosition] = [:]
    private var wordTable: [Word.ID: Word] = [:]
    private var failure: (any Error)?
    /// How many times each word was written, to show that saves are narrow.
    public private(set) var wordWrites: [Word.ID: Int] = [:]

    /// An empty repository.
    public init() {}

    /// Makes every later call throw `error` (nil: work again).
    public func setFailure(_ error: (any Error)?) { failure = error }

    public func books() throws -> [Book] {
        try check()
        return bookTable.values.sorted { $0.id < $1.id }
    }

    public func book(_ id: Book.ID) throws -> Book? {
        try check()
        return bookTable[id]
    }

    public func save(_ book: Book) throws {
        try check()
        bookTable[book.id] = book
    }

    public func positions() throws -> [ReadingPosition] {
        try check()
        return positionTable.values.sorted { $0.id < $1.id }
    }

    public func position(in bookID: Book.ID) throws -> ReadingPosition? {
        try check()
        return positionTable[bookID]
    }

    public func save(_ position: ReadingPosition) throws {
        try check()
        positionTable[position.id] = position
    }

    public func words() throws -> [Word] {
        try check()
        return wordTable.values.sorted { $0.id < $1.id }
    }

    public func word(_ id: Word.ID) throws -> Word? {
        try check()
        return wordTable[id]
    }

    public func save(_ words: [Word]) throws {
        try check()
        for word in words {
            wordTable[word.id] = word
            wordWrites[word.id, default: 0] += 1
        }
    }

    public func removeWord(_ id: Word.ID) throws {
        try check()
        wordTable[id] = nil
    }

    private func check() throws {
        if let failure { throw failure }
    }
}
