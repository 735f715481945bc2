public import RecordKeeper
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The learner's data in a RecordKeeper store: one record per book, per position and per word,
/// in the collections `books`, `positions` and `words`.
///
/// Every save is a record-level save of the items given, based on the versions last read: a
/// record changed by another process meanwhile is a `RecordConflict`, not an overwrite.
/// Reading a store file that does not exist yet gives empty answers and creates nothing; any
/// other problem (a file that is not a store, a path that cannot be opened) is thrown.
public struct RecordKeeperLearnerRepository: LearnerRepository {
    /// The store holding the learner's records.
    public let store: RecordStore
    let bookRecords: RecordRepository<Book>
    let positionRecords: RecordRepository<ReadingPosition>
    let wordRecords: RecordRepository<Word>

    /// Creates the repository on `store`. Does no I/O.
    public init(store: RecordStore) {
        self.store = store
        bookRecords = RecordRepository(store: store, collection: "books")
        positionRecords = RecordRepository(store: store, collection: "positions")
        wordRecords = RecordRepository(store: store, collection: "words")
    }

    public func books() async throws -> [Book] {
        guard storeMayExist else { return [] }
        return try await bookRecords.load()
    }

    public func book(_ id: Book.ID) async throws -> Book? {
        guard storeMayExist else { return nil }
        return try await bookRecords.item(id)
    }

    public func save(_ book: Book) async throws {
        try await bookRecords.save(book)
    }

    public func positions() async throws -> [ReadingPosition] {
        guard storeMayExist else { return [] }
        return try await positionRecords.load()
    }

    public func position(in bookID: Book.ID) async throws -> ReadingPosition? {
        guard storeMayExist else { return nil }
        return try await positionRecords.item(bookID)
    }

    public func save(_ position: ReadingPosition) async throws {
        try await positionRecords.save(position)
    }

    public func words() async throws -> [Word] {
        guard storeMayExist else { return [] }
        return try await wordRecords.load()
    }

    public func word(_ id: Word.ID) async throws -> Word? {
        guard storeMayExist else { return nil }
        return try await wordRecords.item(id)
    }

    /// Answered by two queries over the stored words (never reviewed, oldest added first; then
    /// least recently reviewed), decoding only the words returned. Ties are by ID (the key).
    public func wordsDue(count: Int) async throws -> [Word] {
        guard storeMayExist, count > 0 else { return [] }
        let fresh = try await wordRecords.query(
            where: Word.lastReviewedAtField.isNull, orderBy: [Word.addedAtField.ascending], limit: count)
        guard fresh.elements.count < count else { return fresh.elements }
        let reviewed = try await wordRecords.query(
            where: !Word.lastReviewedAtField.isNull, orderBy: [Word.lastReviewedAtField.ascending],
            limit: count - fresh.elements.count)
        return fresh.elements + reviewed.elements
    }

    public func wordCount() async throws -> Int {
        guard storeMayExist else { return 0 }
        return try await wordRecords.count()
    }

    public func save(_ words: [Word]) async throws {
        try await wordRecords.save(words)
    }

    /// Removes the word's record without reading it (`.overwrite`: a record another process
    /// changed, or one that no longer decodes, is removed as asked).
    @discardableResult
    public func removeWord(_ id: Word.ID) async throws -> Bool {
        guard storeMayExist else { return false }
        return try await wordRecords.delete(id, onConflict: .overwrite)
    }

    /// False only when the store's file is certainly absent (so a read need not create it).
    /// Anything else, including a path that cannot be examined, goes to the store, which
    /// reports what is wrong.
    private var storeMayExist: Bool {
        guard let path = store.url?.path else { return true }
        var info = stat()
        // Only "no such file" means no data yet; any other answer (including ENOTDIR) goes to
        // the store's own opening, which reports the path's problem.
        return stat(path, &info) == 0 || errno != ENOENT
    }
}
