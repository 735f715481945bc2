import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// Conditions built in a loop (`p = p || field.contains(tag)`), long lists of alternatives and
/// deeply nested conditions: an answer, or a `QueryError` before anything runs; never an
/// SQLite parser error or a crash.
@Suite struct QueryNestingTests {
    struct Note: Codable, Identifiable, Equatable, Sendable, Queryable {
        var id: String
        var tags: [String]
        var level: Int

        static let tags = Field<Note, [String]>("tags")
        static let level = Field<Note, Int>("level")
        static let queryFields: [any QueryField] = [tags, level]
    }

    static func notes() -> [Note] {
        (0..<20).map { Note(id: "n\($0)", tags: ["t\($0 * 7)"], level: $0 % 4) }
    }

    @Test(arguments: StoreKind.allCases)
    func `a condition chained with || in a loop answers however long it is`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let notes = RecordRepository<Note>(store: store, collection: "notes")
            try await notes.save(Self.notes())
            // 3,000 terms: before, SQLite's parser overflowed at about 100 and the process
            // crashed at about 3,000.
            var predicate = Note.tags.contains("t0")
            for tag in 1..<3_000 { predicate = predicate || Note.tags.contains("t\(tag)") }
            #expect(try await notes.count(where: predicate) == 20)
            var both = Note.level >= 0
            for tag in 0..<3_000 { both = both && !Note.tags.contains("x\(tag)") }
            #expect(try await notes.count(where: both) == 20)
            // The same through the untyped API, and one flat list of 5,000 alternatives.
            var untyped = RecordField("tags").contains(.string("t0"))
            for tag in 1..<3_000 { untyped = untyped || RecordField("tags").contains(.string("t\(tag)")) }
            #expect(try await store.count("notes", where: untyped) == 20)
            let flat = RecordPredicate.or((0..<5_000).map { RecordField("tags").contains(.string("t\($0 * 2)")) })
            let even = Self.notes().filter { Int($0.tags[0].dropFirst())! % 2 == 0 }.map(\.id)
            let page = try await store.query("notes", RecordQuery(where: flat, orderBy: [RecordField("level").ascending]))
            #expect(Set(page.elements.map(\.key)) == Set(even))
        }
    }

    @Test func `chains of the same operator are one list`() {
        let a = RecordField("a") == 1, b = RecordField("b") == 2, c = RecordField("c") == 3
        #expect((a || b || c) == .or([a, b, c]))
        #expect(((a || b) || (b || c)) == .or([a, b, b, c]))
        #expect((a && b && c) == .and([a, b, c]))
        #expect(((a || b) && c) == .and([.or([a, b]), c]))
        #expect((RecordPredicate.or([]) || a) == .or([a]), "false or a is a")
    }

    @Test(arguments: StoreKind.allCases)
    func `the deepest nesting allowed answers, one level more is a QueryError`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let notes = RecordRepository<Note>(store: store, collection: "notes")
            try await notes.save(Self.notes())
            // Alternating or, and, not down to the limit, each list long enough to be written
            // in three levels of groups: SQLite must parse the deepest condition the check lets
            // through. (A review found lists of 257 at 27 levels passing the check, when it
            // counted only and, or and not, and failing in SQLite's parser.)
            func nested(_ levels: Int, width: Int) -> RecordPredicate {
                var predicate = RecordField("level") >= 0
                for level in 0..<levels {
                    let others = (1..<width).map { RecordField("tags").contains(.string("x\(level)-\($0)")) }
                    switch level % 3 {
                    case 0: predicate = .or([predicate] + others)
                    case 1: predicate = .and([predicate] + others.map { .not($0) })
                    default: predicate = .not(.not(predicate))
                    }
                }
                return predicate
            }
            #expect(QuerySQL.groupLevels(16) == 1 && QuerySQL.groupLevels(17) == 2 && QuerySQL.groupLevels(257) == 3)
            let deepest = nested(12, width: 257)  // 8 lists of 3 levels and 4 × 2 of not: 32
            #expect(deepest.nesting(upTo: 100) == RecordStore.maximumNesting)
            #expect(try await store.count("notes", where: deepest) == 20)
            #expect(try await store.query("notes", RecordQuery(where: deepest, limit: 5)).elements.count == 5)
            #expect(nested(27, width: 257).nesting(upTo: 100) > RecordStore.maximumNesting)
            await #expect(throws: QueryError.self) { try await store.count("notes", where: nested(27, width: 257)) }
            #expect(nested(13, width: 257).nesting(upTo: 100) > RecordStore.maximumNesting)
            await #expect(throws: QueryError.self) { try await store.count("notes", where: nested(13, width: 257)) }

            var tooDeep = RecordField("level") == 1
            for _ in 0...RecordStore.maximumNesting { tooDeep = !tooDeep }
            let error = await #expect(throws: QueryError.self) { try await store.count("notes", where: tooDeep) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.description == "Could not query collection \"notes\": the condition nests and, or and not "
                    + "more than 32 levels deep (a list of more than 16 conditions counts as 2 levels, of more than 256 as 3); "
                    + "list alternatives in one or([...]) (or use in([...])) instead of nesting them")
            // Thousands of levels are refused the same way, without walking them recursively.
            var absurd = RecordField("level") == 1
            for _ in 0..<5_000 { absurd = .not(absurd) }
            await #expect(throws: QueryError.self) { try await store.query("notes", RecordQuery(where: absurd)) }
            var typed = Note.level == 1
            for _ in 0...RecordStore.maximumNesting { typed = !typed }
            await #expect(throws: QueryError.self) { try await notes.query(where: typed) }
        }
    }
}
