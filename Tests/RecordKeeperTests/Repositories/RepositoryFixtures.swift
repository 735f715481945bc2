import Foundation
@testable import RecordKeeper

/// An item keyed by a string ID.
struct Book: Codable, Identifiable, Equatable, Sendable {
    var id: String
    var title: String
    var pages: Int = 100
}

/// An item keyed by a UUID, with a date that must round-trip exactly.
struct Note: Codable, Identifiable, Equatable, Sendable {
    var id: UUID
    var text: String
    var created: Date
}

/// An item keyed by an integer.
struct Chapter: Codable, Identifiable, Equatable, Sendable {
    var id: Int
    var title: String
}

/// An item whose ID is neither a string nor a UUID: keyed by the ID's JSON.
struct Slot: Codable, Identifiable, Equatable, Sendable {
    struct ID: Codable, Hashable, Sendable {
        var shelf: Int
        var position: Int
    }
    var id: ID
    var label: String
}

/// An item whose ID chooses its own key.
struct Card: Codable, Identifiable, Equatable, Sendable {
    struct ID: Codable, Hashable, Sendable, RecordKeyConvertible {
        var deck: String
        var number: Int
        var recordKey: String { "\(deck)#\(number)" }
        init(deck: String, number: Int) {
            self.deck = deck
            self.number = number
        }
        init?(recordKey: String) {
            let parts = recordKey.split(separator: "#", maxSplits: 1)
            guard parts.count == 2, let number = Int(parts[1]) else { return nil }
            self.init(deck: String(parts[0]), number: number)
        }
    }
    var id: ID
    var front: String
}

/// The seed's learner progress: reading positions and vocabulary, stored as the records
/// `positions/<book>` and `vocabulary/<word>`.
struct ReadingProgress: RecordDocument, Equatable {
    struct Position: Codable, Equatable, Sendable {
        var chapter: Int
        var offset: Int
    }
    struct Word: Codable, Equatable, Sendable {
        var translation: String
        var reviews: Int = 0
    }

    static let supportedSchemaVersions = 1...2

    var schemaVersion = 1
    var positions: [String: Position] = [:]
    var vocabulary: [String: Word] = [:]

    init(schemaVersion: Int = 1, positions: [String: Position] = [:], vocabulary: [String: Word] = [:]) {
        self.schemaVersion = schemaVersion
        self.positions = positions
        self.vocabulary = vocabulary
    }

    init(from records: DocumentRecords) throws {
        schemaVersion = records.schemaVersion
        positions = try records.decode(Position.self, inGroup: "positions")
        vocabulary = try records.decode(Word.self, inGroup: "vocabulary")
    }

    func encode(to records: inout DocumentRecords) throws {
        try records.encode(positions, inGroup: "positions")
        try records.encode(vocabulary, inGroup: "vocabulary")
    }
}

/// Which of two writers saves first.
enum WriterOrder: String, CaseIterable, Sendable {
    case firstThenSecond
    case secondThenFirst
}

extension RecordVersion {
    /// Versions of every record of `collection`, by key.
    static func all(in store: RecordStore, _ collection: String) async throws -> [String: RecordVersion] {
        try await store.versionedRecords(collection)?.mapValues(\.version) ?? [:]
    }
}

/// A repository on `books` that saved book "a" (title "A") before another repository, which
/// had loaded it too, saved an edit ("theirs"): its writes of "a" conflict.
func staleRepository(on store: RecordStore) async throws -> RecordRepository<Book> {
    let mine = RecordRepository<Book>(store: store, collection: "books")
    let theirs = RecordRepository<Book>(store: store, collection: "books")
    try await mine.save(Book(id: "a", title: "A"))
    _ = try await theirs.load()
    try await theirs.save(Book(id: "a", title: "theirs"))
    return mine
}
