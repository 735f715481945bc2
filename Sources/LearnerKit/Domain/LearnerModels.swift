public import Foundation
public import RecordKeeper

/// A book the learner reads, identified by a short slug such as `moby-dick`.
public struct Book: Codable, Identifiable, Equatable, Sendable {
    /// The slug: letters, digits, `-`, `_` and `.`.
    public var id: String
    /// The title shown; by default made from the slug (`moby-dick` → "Moby Dick").
    public var title: String

    /// A book; without a title, the title is made from the slug.
    public init(id: String, title: String? = nil) {
        self.id = id
        self.title = title ?? Book.title(fromSlug: id)
    }

    /// "moby-dick" → "Moby Dick".
    public static func title(fromSlug slug: String) -> String {
        slug.split(whereSeparator: { $0 == "-" || $0 == "_" })
            .map { $0.prefix(1).uppercased() + $0.dropFirst() }
            .joined(separator: " ")
    }
}

/// Where the learner is in one book. Its ID is the book's ID.
public struct ReadingPosition: Codable, Identifiable, Equatable, Sendable {
    /// The book's ID.
    public var id: String
    /// The page reached, from 1.
    public var page: Int
    /// When the page was recorded.
    public var updatedAt: Date

    /// The position `page` in the book `bookID`, recorded at `updatedAt`.
    public init(bookID: String, page: Int, updatedAt: Date) {
        self.id = bookID
        self.page = page
        self.updatedAt = updatedAt
    }
}

/// A word being learned, with its translation and review history. Its ID is the word in
/// lower case.
public struct Word: Codable, Identifiable, Equatable, Sendable {
    /// The word, in lower case.
    public var id: String
    /// What it means.
    public var translation: String
    /// When it was first added.
    public var addedAt: Date
    /// How many reviews showed it.
    public var reviewCount: Int
    /// When a review last showed it; nil if never.
    public var lastReviewedAt: Date?

    /// A word as added, by default never reviewed.
    public init(id: String, translation: String, addedAt: Date, reviewCount: Int = 0, lastReviewedAt: Date? = nil) {
        self.id = id
        self.translation = translation
        self.addedAt = addedAt
        self.reviewCount = reviewCount
        self.lastReviewedAt = lastReviewedAt
    }

    /// The words to review next: never reviewed first (oldest added first), then the least
    /// recently reviewed.
    public static func dueForReview(_ words: [Word], count: Int) -> [Word] {
        let ordered = words.sorted { a, b in
            switch (a.lastReviewedAt, b.lastReviewedAt) {
            case (nil, nil): return (a.addedAt, a.id) < (b.addedAt, b.id)
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): return (x, a.id) < (y, b.id)
            }
        }
        return Array(ordered.prefix(max(0, count)))
    }
}

extension Word: Queryable {
    /// `addedAt`, for queries.
    public static let addedAtField = Field<Word, Date>("addedAt")
    /// `lastReviewedAt`, for queries (missing until the first review).
    public static let lastReviewedAtField = Field<Word, Date?>("lastReviewedAt")
    public static let queryFields: [any QueryField] = [addedAtField, lastReviewedAtField]
}

/// Everything `learner status` shows.
public struct LearnerStatus: Equatable, Sendable {
    /// Every book.
    public var books: [Book]
    /// Every reading position.
    public var positions: [ReadingPosition]
    /// Every word.
    public var words: [Word]

    /// True when nothing was saved yet (which is not the same as "could not be read": that
    /// throws).
    public var isEmpty: Bool { books.isEmpty && positions.isEmpty && words.isEmpty }

    /// Reads the status from `repository`.
    public static func load(from repository: any LearnerRepository) async throws -> LearnerStatus {
        LearnerStatus(
            books: try await repository.books(),
            positions: try await repository.positions(),
            words: try await repository.words())
    }
}
