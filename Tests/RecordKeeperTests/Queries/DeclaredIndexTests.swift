import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// Format 7: declared indexes, their use by queries, and their fixture.
@Suite struct DeclaredIndexTests {
    static let due = RecordQuery(where: RecordField("dueAt") >= 15, orderBy: [RecordField("dueAt").descending], limit: 20)

    static func usesIndex(_ plan: [String]) -> Bool { plan.contains { $0.contains("USING INDEX declared_") } }

    @Test(arguments: StoreKind.allCases)
    func `a declared field is searched through its index, an undeclared one by a scan`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("words", values: FormatSevenFixture.words)
            try await store.replace("other", values: ["x": Data(#"{"dueAt":99}"#.utf8)])
            let before = try await store.queryPlan("words", Self.due)
            #expect(!Self.usesIndex(before), "\(before)")
            #expect(try await store.declareIndex("words", on: FieldPath("dueAt")))
            #expect(try await store.declareIndex("words", on: FieldPath("dueAt")) == false)
            let plan = try await store.queryPlan("words", Self.due)
            #expect(Self.usesIndex(plan), "\(plan)")
            #expect(plan.contains { $0.hasPrefix("SEARCH") }, "\(plan)")
            #expect(!plan.contains { $0.contains("USE TEMP B-TREE") }, "the index gives the order: \(plan)")
            #expect(try await store.query("words", Self.due).elements.map(\.key) == ["tree", "sun"])
            // The other collection has no index of its own, and its records are not in this one.
            #expect(!Self.usesIndex(try await store.queryPlan("other", Self.due)))
            #expect(try await store.query("other", Self.due).elements.map(\.key) == ["x"])
            // An undeclared field still answers, by scanning.
            let byLevel = RecordQuery(where: RecordField("level") == 1)
            #expect(!Self.usesIndex(try await store.queryPlan("words", byLevel)))
            #expect(try await store.query("words", byLevel).elements.map(\.key) == ["sun", "tree"])
        }
    }

    @Test func `declared indexes survive reopening and dropping one removes it`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let first = RecordStore(url: url)
            try await first.replace("words", values: FormatSevenFixture.words)
            try await first.declareIndex("words", on: FieldPath("dueAt"))
            try await first.declareIndex("words", on: FieldPath("level"))
            await first.close()
            let second = RecordStore(url: url)
            #expect(try await second.declaredIndexes("words").map(\.description) == ["dueAt", "level"])
            #expect(Self.usesIndex(try await second.queryPlan("words", Self.due)))
            #expect(try await second.dropIndex("words", on: FieldPath("dueAt")))
            #expect(try await second.dropIndex("words", on: FieldPath("dueAt")) == false)
            await second.close()
            let third = RecordStore(url: url)
            #expect(try await third.declaredIndexes("words").map(\.description) == ["level"])
            #expect(!Self.usesIndex(try await third.queryPlan("words", Self.due)))
            #expect(try await third.query("words", Self.due).elements.map(\.key) == ["tree", "sun"])
            await third.close()
        }
    }

    @Test func `a declared index row that is no field path this library writes, or whose index is gone, is left out, and queries still answer`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let first = RecordStore(url: url)
            try await first.replace("words", values: FormatSevenFixture.words)
            try await first.declareIndex("words", on: FieldPath("dueAt"))
            await first.close()
            // Another program (or a damaged file) adds rows no FieldPath would make.
            for bad in ["due-at", "a'b", "", "a..b"] {
                try rawSQLite(
                    url,
                    "INSERT INTO declared_indexes (collection_id, field) SELECT collection_id, '\(bad.replacingOccurrences(of: "'", with: "''"))' "
                        + "FROM declared_indexes LIMIT 1")
            }
            let second = RecordStore(url: url)
            #expect(try await second.declaredIndexes("words").map(\.description) == ["dueAt"])
            #expect(Self.usesIndex(try await second.queryPlan("words", Self.due)))
            #expect(try await second.query("words", Self.due).elements.map(\.key) == ["tree", "sun"])
            await second.close()
            // Another program drops the SQLite index and leaves the row: queries scan.
            let id = try #require(try await second.perform(.read, collection: nil) { try $0.records.collectionID("words") })
            try rawSQLite(url, "DROP INDEX \"\(DeclaredIndex(collectionID: id, field: try FieldPath("dueAt")).name)\"")
            let third = RecordStore(url: url)
            #expect(try await third.declaredIndexes("words").isEmpty)
            #expect(!Self.usesIndex(try await third.queryPlan("words", Self.due)))
            #expect(try await third.query("words", Self.due).elements.map(\.key) == ["tree", "sun"])
            await third.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `removing a collection drops its indexes, and an indexed collection refuses a payload that is not JSON`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("words", values: FormatSevenFixture.words)
            try await store.declareIndex("words", on: FieldPath("dueAt"))
            let refused = await #expect(throws: RecordStoreError.self) {
                try await store.put("words", key: "bad", data: Data("not json".utf8))
            }
            // The caller's input, named, with SQLite's own message kept.
            #expect(refused?.code == .invalidArgument)
            #expect(refused?.key == "bad")
            #expect(refused?.sqliteMessage == "malformed JSON")
            #expect(refused?.description.contains("declared indexes") == true, "\(String(describing: refused))")
            // A batch with one such payload is refused whole.
            await #expect(throws: RecordStoreError.self) {
                try await store.apply("words", changes: RecordChanges(upserts: ["good": Data(#"{"dueAt":1}"#.utf8), "bad": Data("x".utf8)]))
            }
            #expect(try await store.value("words", key: "bad") == nil)
            #expect(try await store.value("words", key: "good") == nil)
            try await store.removeCollection("words")
            #expect(try await store.declaredIndexes("words") == [])
            try await store.put("words", key: "bad", data: Data("not json".utf8))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `declaring an index over a payload that is not JSON names that record and declares nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("notes", values: [
                "a": Data(#"{"title":"x"}"#.utf8), "b": Data("plain text".utf8), "c": Data("more text".utf8),
            ])
            let refused = await #expect(throws: RecordStoreError.self) {
                try await store.declareIndex("notes", on: FieldPath("title"))
            }
            #expect(refused?.code == .invalidArgument)
            #expect(refused?.collection == "notes")
            #expect(refused?.key == "b", "the first such record in key order")
            #expect(refused?.sqliteMessage == "malformed JSON")
            #expect(refused?.errorDescription?.contains("(key \"b\")") == true, "\(String(describing: refused))")
            #expect(try await store.declaredIndexes("notes") == [])
            #expect(!Self.usesIndex(try await store.queryPlan("notes", RecordQuery(where: RecordField("title") == "x"))))
            // Without an index, payloads that are not JSON are still accepted.
            try await store.put("notes", key: "d", data: Data("still text".utf8))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a repository declares indexes by its key strategy`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let words = RecordRepository<ItemQueryTests.Word>(
                store: store, collection: "words", strategies: .init(keys: .snakeCase))
            try await words.save(ItemQueryTests.words())
            try await words.declareIndexes([ItemQueryTests.Word.dueAt])
            #expect(try await store.declaredIndexes("words").map(\.description) == ["due_at"])
            await #expect(throws: QueryError.self) { try await words.declareIndexes([ItemQueryTests.Word.undeclared]) }
            let plan = try await store.queryPlan("words", RecordQuery(where: RecordField("due_at") > 0.0))
            #expect(Self.usesIndex(plan), "\(plan)")
        }
    }

    @Test func `a repository's indexes are declared all at once, or none when one of them fails`() async throws {
        try await withStore(.onDisk) { store, url in
            let words = RecordRepository<ItemQueryTests.Word>(store: store, collection: "words")
            try await words.save(ItemQueryTests.words())
            // Another program took the name the second index gets: creating it fails.
            let id = try #require(try await store.perform(.read, collection: nil) { try $0.records.collectionID("words") })
            let taken = DeclaredIndex(collectionID: id, field: try FieldPath("level")).name
            let other = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            try other.execute("CREATE TABLE \"\(taken)\" (x)")
            await #expect(throws: RecordStoreError.self) {
                try await words.declareIndexes([ItemQueryTests.Word.dueAt, ItemQueryTests.Word.level])
            }
            #expect(try await store.declaredIndexes("words").isEmpty, "the first index did not stay without the second")
            try other.execute("DROP TABLE \"\(taken)\"")
            try await words.declareIndexes([ItemQueryTests.Word.dueAt, ItemQueryTests.Word.level])
            #expect(try await store.declaredIndexes("words").map(\.description) == ["dueAt", "level"])
        }
    }

    @Test func `a format 6 store migrates to format 7 with no declared index`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-6.sqlite", into: directory)
            let store = RecordStore(url: url)
            #expect(try await store.declaredIndexes("events") == [], "read as it is: format 6 has none")
            #expect(try await store.info().formatVersion == 6)
            let before = try await store.read("events")
            #expect(try await store.declareIndex("events", on: FieldPath("starts_at")))
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await store.read("events") == before)
            #expect(try await store.query("events", RecordQuery(where: RecordField("starts_at") > "2024")).elements.map(\.key) == ["retro"])
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 7 store opens with its declared indexes`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-7.sqlite", into: directory)
            let header = try Data(contentsOf: url)
            #expect(header[60..<64] == Data([0, 0, 0, 7]), "the fixture was written by format 7 (user_version)")
            let store = RecordStore(url: url)
            #expect(try await store.declaredIndexes("words").map(\.description) == ["dueAt", "level"])
            #expect(try await store.declaredIndexes("notes") == [])
            #expect(Self.usesIndex(try await store.queryPlan("words", Self.due)))
            #expect(try await store.query("words", Self.due).elements.map(\.key) == ["tree", "sun"])
            #expect(try await store.read("notes") == ["today": Data("plain record".utf8)])
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }
}

extension DeclaredIndexTests {
    @Test(arguments: StoreKind.allCases)
    func `every predicate kind gives the same records with and without indexes`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordQueryTests.fill(store, RecordQueryTests.rows)
            let n = RecordField("n"), s = RecordField("s"), tag = RecordField("tag")
            let predicates: [RecordPredicate] = [
                n == 3, n != 3, n < 3, n <= "3", n > 1, n >= 2.5, n.between(2, 3), n.in([1, 3]), n.in([]),
                n.in([nil, 1]), s.hasPrefix("ap"), s.hasPrefix(""), tag.isNull, tag.exists, !(n < 3),
                n > 1 && s.hasPrefix("b"), n == 1 || s == "banana", RecordField("nested.city") == "Oslo",
            ]
            let orders: [[RecordOrder]] = [[], [n.ascending], [s.descending, n.ascending]]
            func answers() async throws -> [[String]] {
                var result: [[String]] = []
                for predicate in predicates {
                    for order in orders {
                        result.append(try await store.query("items", RecordQuery(where: predicate, orderBy: order)).elements.map(\.key))
                        result.append([String(try await store.count("items", where: predicate))])
                    }
                }
                return result
            }
            let scanned = try await answers()
            for field in ["n", "s", "tag", "nested.city"] { try await store.declareIndex("items", on: FieldPath(field)) }
            #expect(Self.usesIndex(try await store.queryPlan("items", RecordQuery(where: n.in([nil, 1])))))
            #expect(try await answers() == scanned)
        }
    }
}

extension DeclaredIndexTests {
    /// The keys of every page of `query`, following each page's token to the end.
    static func keysPageByPage(_ store: RecordStore, _ collection: String, _ query: RecordQuery) async throws -> [String] {
        var query = query
        var keys: [String] = []
        repeat {
            let page = try await store.query(collection, query)
            keys += page.elements.map(\.key)
            query.after = page.next
        } while query.after != nil
        return keys
    }

    @Test(arguments: StoreKind.allCases, [false, true])
    func `pages through missing values give every record once, indexed or not`(kind: StoreKind, indexed: Bool) async throws {
        try await withStore(kind) { store, _ in
            try await RecordQueryTests.fill(store, (0..<9).map { ("k\($0)", $0 % 3 == 0 ? "{}" : #"{"v":\#($0 % 2)}"#) })
            if indexed { try await store.declareIndex("items", on: FieldPath("v")) }
            for order in [RecordField("v").ascending, RecordField("v").descending] {
                let all = try await store.query("items", RecordQuery(orderBy: [order])).elements.map(\.key)
                let paged = try await Self.keysPageByPage(store, "items", RecordQuery(orderBy: [order], limit: 2))
                #expect(paged == all)
                #expect(Set(all).count == 9)
            }
        }
    }
}
