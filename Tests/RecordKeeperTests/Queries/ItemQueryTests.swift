import Foundation
import RecordKeeper
import TestHelpers
import Testing

@Suite struct ItemQueryTests {
    enum Kind: String, Codable, Sendable { case noun, verb }

    struct Word: Codable, Identifiable, Equatable, Sendable, Queryable {
        var id: String
        var text: String
        var dueAt: Date
        var level: Int
        var kind: Kind
        var note: String?

        static let text = Field<Word, String>("text")
        static let dueAt = Field<Word, Date>("dueAt")
        static let level = Field<Word, Int>("level")
        static let kind = Field<Word, Kind>("kind")
        static let note = Field<Word, String?>("note")
        static let queryFields: [any QueryField] = [text, dueAt, level, kind, note]
        /// Not in `queryFields`.
        static let undeclared = Field<Word, Int>("undeclared")
    }

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func words() -> [Word] {
        (0..<8).map { index in
            Word(
                id: "w\(index)", text: ["tree", "run", "trek", "sun"][index % 4],
                dueAt: start + Double(index) * 3_600, level: index % 3, kind: index % 2 == 0 ? .noun : .verb,
                note: index == 3 ? "hard" : nil)
        }
    }

    static let strategies: [RecordCoding.Strategies] = [
        .default, .init(dates: .iso8601, keys: .snakeCase), .init(dates: .millisecondsSince1970),
    ]

    @Test(arguments: StoreKind.allCases, strategies)
    func `typed predicates compare values as the coder writes them`(kind: StoreKind, strategies: RecordCoding.Strategies) async throws {
        try await withStore(kind) { store, _ in
            let words = RecordRepository<Word>(store: store, collection: "words", strategies: strategies)
            try await words.save(Self.words())
            let due = try await words.query(
                where: Word.dueAt <= Self.start + 3 * 3_600, orderBy: [Word.dueAt.descending], limit: 2)
            #expect(due.elements.map(\.id) == ["w3", "w2"])
            let rest = try await words.query(
                where: Word.dueAt <= Self.start + 3 * 3_600, orderBy: [Word.dueAt.descending], limit: 2, after: due.next)
            #expect(rest.elements.map(\.id) == ["w1", "w0"])
            #expect(try await words.count(where: Word.kind == .verb) == 4)
            #expect(try await words.count(where: Word.level.in([0, 2]) && Word.kind == .noun) == 3)
            #expect(try await words.query(where: Word.text.hasPrefix("tr")).elements.map(\.id) == ["w0", "w2", "w4", "w6"])
            #expect(try await words.query(where: !Word.note.isNull).elements.map(\.id) == ["w3"])
            #expect(try await words.query(where: Word.note == nil).elements.count == 7)
            #expect(try await words.query(where: Word.level.between(1, 1)).elements.map(\.id) == ["w1", "w4", "w7"])
            #expect(try await words.exists(where: Word.dueAt > Self.start + 100 * 3_600) == false)
            let ordered = try await words.query(orderBy: [Word.level.ascending, Word.text.descending])
            #expect(ordered.elements.map(\.id) == ["w6", "w0", "w3", "w4", "w7", "w1", "w2", "w5"])  // trek > tree > sun > run
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `date bounds with a fraction of a second select exactly the items whose whole-second ISO 8601 dates match`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let words = RecordRepository<Word>(store: store, collection: "words", strategies: .init(dates: .iso8601))
            try await words.save((0..<12).map { index in
                Word(id: String(format: "w%02d", index), text: "t", dueAt: Self.start + Double(index) * 0.4, level: 0, kind: .noun)
            })
            let stored = try await words.load()  // dates as stored: whole seconds
            #expect(Set(stored.map(\.dueAt)).count == 5)
            typealias Case = (ItemPredicate<Word>, (Date) -> Bool)
            for offset in [-0.5, 0, 1.9, 2, 2.1, 4.4, 9] {
                let bound = Self.start + offset
                let cases: [Case] = [
                    (Word.dueAt >= bound, { $0 >= bound }), (Word.dueAt > bound, { $0 > bound }),
                    (Word.dueAt <= bound, { $0 <= bound }), (Word.dueAt < bound, { $0 < bound }),
                    (Word.dueAt == bound, { $0 == bound }), (Word.dueAt != bound, { $0 != bound }),
                    (Word.dueAt.between(bound - 1.3, bound), { $0 >= bound - 1.3 && $0 <= bound }),
                    (Word.dueAt.in([bound, bound + 1]), { $0 == bound || $0 == bound + 1 }),
                    (!(Word.dueAt > bound), { !($0 > bound) }),
                ]
                for (index, (predicate, holds)) in cases.enumerated() {
                    let found = try await words.query(where: predicate).elements.map(\.id)
                    #expect(found == stored.filter { holds($0.dueAt) }.map(\.id), "offset \(offset), case \(index)")
                }
            }
        }
    }

    struct Rated: Codable, Identifiable, Equatable, Sendable, Queryable {
        var id: String
        var score: Int?
        var seen: Date?
        var title: String?

        static let score = Field<Rated, Int?>("score")
        static let seen = Field<Rated, Date?>("seen")
        static let title = Field<Rated, String?>("title")
        static let queryFields: [any QueryField] = [score, seen, title]
    }

    @Test(arguments: StoreKind.allCases)
    func `optional fields take range comparisons and prefixes, which a missing value never matches`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let items = RecordRepository<Rated>(store: store, collection: "rated")
            try await items.save([
                Rated(id: "a", score: 1, seen: Self.start, title: "apple"),
                Rated(id: "b", score: 5, seen: Self.start + 60, title: "banana"),
                Rated(id: "c", score: nil, seen: nil, title: nil),
                Rated(id: "d", score: 9, seen: Self.start + 120, title: "apricot"),
            ])
            func ids(_ predicate: ItemPredicate<Rated>) async throws -> [String] {
                try await items.query(where: predicate).elements.map(\.id)
            }
            #expect(try await ids(Rated.score < 6) == ["a", "b"])
            #expect(try await ids(Rated.score <= 5) == ["a", "b"])
            #expect(try await ids(Rated.score > 1) == ["b", "d"])
            #expect(try await ids(Rated.score >= 9) == ["d"])
            #expect(try await ids(Rated.score.between(2, 9)) == ["b", "d"])
            #expect(try await ids(!(Rated.score < 6)) == ["c", "d"], "not turns exactly the false ones true")
            #expect(try await ids(Rated.seen >= Self.start + 60) == ["b", "d"])
            #expect(try await ids(Rated.title.hasPrefix("ap")) == ["a", "d"])
            #expect(try await items.count(where: Rated.score == nil) == 1)
        }
    }

    struct Tagged: Codable, Identifiable, Equatable, Sendable, Queryable {
        var id: String
        var tags: [String]
        var days: Set<Date>?
        var label: String

        static let tags = Field<Tagged, [String]>("tags")
        static let days = Field<Tagged, Set<Date>?>("days")
        static let label = Field<Tagged, String>("label")
        static let queryFields: [any QueryField] = [tags, days, label]
    }

    @Test(arguments: StoreKind.allCases, strategies)
    func `array and set fields answer contains, element by element`(kind: StoreKind, strategies: RecordCoding.Strategies) async throws {
        try await withStore(kind) { store, _ in
            let items = RecordRepository<Tagged>(store: store, collection: "tagged", strategies: strategies)
            try await items.save([
                Tagged(id: "a", tags: ["swift", "sqlite"], days: [Self.start], label: "swift"),
                Tagged(id: "b", tags: ["swiftui"], days: nil, label: "x"),
                Tagged(id: "c", tags: [], days: [Self.start + 86_400, Self.start], label: "y"),
                Tagged(id: "d", tags: ["SQLite", "swift"], days: [], label: "z"),
            ])
            func ids(_ predicate: ItemPredicate<Tagged>) async throws -> [String] {
                try await items.query(where: predicate).elements.map(\.id)
            }
            #expect(try await ids(Tagged.tags.contains("swift")) == ["a", "d"])
            #expect(try await ids(Tagged.tags.contains("sqlite")) == ["a"], "elements compare exactly")
            #expect(try await ids(Tagged.tags.contains("swi")).isEmpty, "an element, not a substring")
            #expect(try await ids(!Tagged.tags.contains("swift")) == ["b", "c"])
            #expect(try await ids(Tagged.days.contains(Self.start)) == ["a", "c"], "dates as the coder writes them")
            #expect(try await ids(Tagged.days.contains(Self.start + 1)).isEmpty)
            #expect(try await ids(Tagged.tags.contains("swift") && Tagged.days.contains(Self.start)) == ["a"])
            #expect(try await items.count(where: Tagged.tags.contains("swiftui") || Tagged.tags.contains("SQLite")) == 2)
            // A page after a page, with contains in the query: the same statement shape, new values.
            let first = try await items.query(where: Tagged.tags.contains("swift"), orderBy: [Tagged.label.ascending], limit: 1)
            let second = try await items.query(
                where: Tagged.tags.contains("swift"), orderBy: [Tagged.label.ascending], limit: 1, after: first.next)
            #expect(first.elements.map(\.id) + second.elements.map(\.id) == ["a", "d"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a field the item type does not declare is an error naming it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let words = RecordRepository<Word>(store: store, collection: "words")
            try await words.save(Self.words())
            let error = await #expect(throws: QueryError.self) {
                try await words.query(where: Word.undeclared == 1)
            }
            #expect(error?.code == .undeclaredField)
            #expect(error?.field == "undeclared")
            #expect(error?.collection == "words")
            #expect(error?.description.contains("\"undeclared\"") == true)
            await #expect(throws: QueryError.self) { try await words.query(orderBy: [Word.undeclared.ascending]) }
            await #expect(throws: QueryError.self) { try await words.count(where: Word.undeclared > 1) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `queried items become the base of later saves`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let words = RecordRepository<Word>(store: store, collection: "words")
            try await words.save(Self.words())
            let other = RecordRepository<Word>(store: store, collection: "words")
            var word = try #require(try await other.query(where: Word.text == "sun", limit: 1).elements.first)
            word.level = 9
            try await other.save(word)  // no conflict: the query taught its version
            #expect(try await words.count(where: Word.level == 9) == 1)
        }
    }
}
