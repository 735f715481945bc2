/// What the learner app stores, in its own words: books, reading positions and words.
///
/// Saves are narrow: saving one position or some words writes only those, never the others.
/// A failure to read throws; it is never an empty answer.
public protocol LearnerRepository: Sendable {
    /// Every book, sorted by ID.
    func books() async throws -> [Book]
    /// The book with `id`, or nil.
    func book(_ id: Book.ID) async throws -> Book?
    /// Saves one book.
    func save(_ book: Book) async throws

    /// Every reading position, sorted by book ID.
    func positions() async throws -> [ReadingPosition]
    /// The position in the book `bookID`, or nil when it was never recorded.
    func position(in bookID: Book.ID) async throws -> ReadingPosition?
    /// Saves one position.
    func save(_ position: ReadingPosition) async throws

    /// Every word, sorted by ID.
    func words() async throws -> [Word]
    /// The word with `id`, or nil.
    func word(_ id: Word.ID) async throws -> Word?
    /// Saves exactly `words`; other words are not touched.
    func save(_ words: [Word]) async throws
    /// Removes one word, whatever it holds (also a record that no longer decodes), and says
    /// whether there was one.
    @discardableResult
    func removeWord(_ id: Word.ID) async throws -> Bool
    /// The `count` words due for review, in ``Word/dueForReview(_:count:)``'s order.
    func wordsDue(count: Int) async throws -> [Word]
    /// How many words there are.
    func wordCount() async throws -> Int
}

extension LearnerRepository {
    /// Every word, ordered by ``Word/dueForReview(_:count:)``: for repositories without queries.
    public func wordsDue(count: Int) async throws -> [Word] { Word.dueForReview(try await words(), count: count) }
    /// Every word, counted.
    public func wordCount() async throws -> Int { try await words().count }
}
