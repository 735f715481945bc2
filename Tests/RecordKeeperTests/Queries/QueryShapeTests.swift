import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// The SQL text kept per query shape (`QueryShapeKey`, `RecordQueries.querySQL`): a query of a
/// kept shape is bound with its own values and planned for the declared indexes of now.
@Suite struct QueryShapeTests {
    static let dueAt = RecordField("dueAt")
    static let level = RecordField("level")
    static let indexed = [FieldPath(validSegments: ["dueAt"])]

    /// Pairs of queries that differ only in their values.
    static var sameShapes: [(RecordQuery, RecordQuery)] {
        let order = [dueAt.descending, level.ascending]
        func token(_ values: [QueryValue], _ key: String) -> QueryPageToken {
            QueryPageToken(order: RecordQuery(orderBy: order).orderSignature, values: values, key: key)
        }
        let predicates: [(RecordPredicate, RecordPredicate)] = [
            (dueAt == 5, dueAt == 7), (dueAt != 5, dueAt != "x"), (dueAt < 5, dueAt < 7.5), (dueAt <= 5, dueAt <= 6),
            (dueAt > 5, dueAt > 6), (dueAt >= 5, dueAt >= true), (dueAt == nil, dueAt == nil), (dueAt != nil, dueAt != nil),
            (dueAt < nil, dueAt < nil), (.compare(dueAt.path, .equal, nil), .compare(dueAt.path, .equal, nil)),
            (.compare(dueAt.path, .notEqual, nil), .compare(dueAt.path, .notEqual, nil)), (dueAt.between(1, 2), dueAt.between(3, 4)), (dueAt.in([1, 2]), dueAt.in([3, 4])),
            (dueAt.in([1, nil, 2]), dueAt.in(["a", nil, "b"])), (dueAt.in([]), dueAt.in([])),
            (dueAt.hasPrefix("ab"), dueAt.hasPrefix("cd")), (dueAt.hasPrefix(""), dueAt.hasPrefix("\u{10FFFF}")),
            (.isNull(dueAt.path), .isNull(dueAt.path)),
            (dueAt >= 1 && (level == 2 || !(level.in([3, 4]))), dueAt >= 9 && (level == 8 || !(level.in([7, 6])))),
            (.and([]), .and([])), (.or([]), .or([])),
        ]
        var pairs = predicates.map { (RecordQuery(where: $0.0, orderBy: order, limit: 3), RecordQuery(where: $0.1, orderBy: order, limit: 4)) }
        pairs.append((RecordQuery(orderBy: order, limit: 2, after: token([5, 1], "a")), RecordQuery(orderBy: order, limit: 9, after: token([7, 2], "b"))))
        pairs.append((RecordQuery(orderBy: order, after: token([nil, 1], "a")), RecordQuery(orderBy: order, after: token([nil, "z"], "c"))))
        pairs.append((RecordQuery(where: dueAt > 1, orderBy: [level.ascending]), RecordQuery(where: dueAt > 2, orderBy: [level.ascending])))
        return pairs
    }

    @Test func `queries of one shape have one text and bind their own values where it binds them`() {
        for (first, second) in Self.sameShapes {
            for shape in [QuerySQL.Shape.rows, .count, .exists] {
                let firstSQL = QuerySQL(first, collectionID: 7, indexed: Self.indexed, shape: shape)
                let secondSQL = QuerySQL(second, collectionID: 7, indexed: Self.indexed, shape: shape)
                #expect(QueryShapeKey(first, collectionID: 7, indexed: Self.indexed, shape: shape)
                    == QueryShapeKey(second, collectionID: 7, indexed: Self.indexed, shape: shape), "\(first)")
                #expect(firstSQL.text == secondSQL.text, "\(first) / \(second)")
                #expect(QuerySQL.sameBindings(QuerySQL.boundValues(of: first, shape: shape), firstSQL.values), "\(first), \(shape)")
                #expect(QuerySQL.sameBindings(QuerySQL.boundValues(of: second, shape: shape), secondSQL.values), "\(second), \(shape)")
            }
        }
    }

    @Test func `queries whose text differs are of different shapes`() {
        let order = [Self.dueAt.descending]
        let pairs: [(RecordQuery, RecordQuery)] = [
            (RecordQuery(where: Self.dueAt == 5), RecordQuery(where: .compare(Self.dueAt.path, .equal, nil))),
            (RecordQuery(where: Self.dueAt != 5), RecordQuery(where: .compare(Self.dueAt.path, .notEqual, nil))),
            (RecordQuery(where: Self.dueAt.in([1, 2])), RecordQuery(where: Self.dueAt.in([1, 2, 3]))),
            (RecordQuery(where: Self.dueAt.in([1, 2])), RecordQuery(where: Self.dueAt.in([1, nil]))),
            (RecordQuery(where: Self.dueAt.hasPrefix("a")), RecordQuery(where: Self.dueAt.hasPrefix(""))),
            (RecordQuery(orderBy: order, limit: 2), RecordQuery(orderBy: order)),
            (RecordQuery(orderBy: order), RecordQuery(orderBy: [Self.dueAt.ascending])),
        ]
        for (first, second) in pairs {
            #expect(QuerySQL(first, collectionID: 7, indexed: Self.indexed, shape: .rows).text
                != QuerySQL(second, collectionID: 7, indexed: Self.indexed, shape: .rows).text)
            #expect(QueryShapeKey(first, collectionID: 7, indexed: Self.indexed, shape: .rows)
                != QueryShapeKey(second, collectionID: 7, indexed: Self.indexed, shape: .rows), "\(first) / \(second)")
        }
        // The collection and the declared indexes are part of the shape: both are in the text.
        let query = RecordQuery(orderBy: order, limit: 2)
        #expect(QueryShapeKey(query, collectionID: 7, indexed: Self.indexed, shape: .rows)
            != QueryShapeKey(query, collectionID: 8, indexed: Self.indexed, shape: .rows))
        #expect(QueryShapeKey(query, collectionID: 7, indexed: Self.indexed, shape: .rows)
            != QueryShapeKey(query, collectionID: 7, indexed: [], shape: .rows))
    }

    /// The fixture's words (key, dueAt, level) that `include` selects, newest first.
    static func expected(_ include: (Int, Int) -> Bool) -> [String] {
        [("tree", 30, 1), ("sun", 20, 1), ("run", 10, 2)].filter { include($0.1, $0.2) }.map(\.0)
    }

    @Test(arguments: StoreKind.allCases)
    func `a shape asked again with other values answers for those values`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("words", values: FormatSevenFixture.words)
            try await store.declareIndex("words", on: FieldPath("dueAt"))
            let dueAt = Self.dueAt, level = Self.level
            for bound in [10, 15, 20, 30, 35] {
                let value = QueryValue.integer(Int64(bound))
                let cases: [(RecordPredicate, (Int, Int) -> Bool)] = [
                    (dueAt >= value, { due, _ in due >= bound }), (dueAt != value, { due, _ in due != bound }),
                    (dueAt.between(value, .integer(Int64(bound + 10))), { due, _ in due >= bound && due <= bound + 10 }),
                    (dueAt.in([value, 30]), { due, _ in due == bound || due == 30 }),
                    (level == 1 && dueAt > value, { due, level in level == 1 && due > bound }),
                    (!(dueAt <= value), { due, _ in due > bound }),
                ]
                for (predicate, include) in cases {
                    let keys = Self.expected(include)
                    let newest = RecordQuery(where: predicate, orderBy: [dueAt.descending], limit: 2)
                    #expect(try await store.query("words", newest).elements.map(\.key) == Array(keys.prefix(2)), "\(predicate)")
                    #expect(try await store.count("words", where: predicate) == keys.count, "\(predicate)")
                    #expect(try await store.exists("words", where: predicate) == !keys.isEmpty, "\(predicate)")
                    let paged = RecordQuery(where: predicate, orderBy: [dueAt.descending], limit: 1)
                    #expect(try await DeclaredIndexTests.keysPageByPage(store, "words", paged) == keys, "\(predicate)")
                }
            }
            // A null and a value are two shapes of one predicate: each answers for itself.
            for _ in 0..<2 {
                #expect(try await store.count("words", where: RecordField("missing") == nil) == 3)
                #expect(try await store.count("words", where: RecordField("missing") == 5) == 0)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a kept shape whose index another store dropped is planned as a scan`(kind: StoreKind) async throws {
        try await withStore(kind) { store, url in
            try await store.replace("words", values: FormatSevenFixture.words)
            try await store.declareIndex("words", on: FieldPath("dueAt"))
            func newest(after bound: QueryValue) -> RecordQuery {
                RecordQuery(where: Self.dueAt > bound, orderBy: [Self.dueAt.descending], limit: 2)
            }
            // Kept on this store's reader: the shape's text naming the index (INDEXED BY).
            #expect(try await store.query("words", newest(after: 5)).elements.map(\.key) == ["tree", "sun"])
            #expect(DeclaredIndexTests.usesIndex(try await store.queryPlan("words", newest(after: 5))))
            func changeIndex(drop: Bool) async throws {
                let other = kind == .onDisk ? RecordStore(url: url) : store
                if drop {
                    #expect(try await other.dropIndex("words", on: FieldPath("dueAt")))
                } else {
                    #expect(try await other.declareIndex("words", on: FieldPath("dueAt")))
                }
                if kind == .onDisk { await other.close() }
            }
            try await changeIndex(drop: true)
            // The same shape with another value: a stale INDEXED BY would fail ("no such index").
            #expect(try await store.query("words", newest(after: 15)).elements.map(\.key) == ["tree", "sun"])
            #expect(try await store.count("words", where: Self.dueAt > 25) == 1)
            #expect(!DeclaredIndexTests.usesIndex(try await store.queryPlan("words", newest(after: 25))))
            try await changeIndex(drop: false)
            #expect(DeclaredIndexTests.usesIndex(try await store.queryPlan("words", newest(after: 0))))
            #expect(try await store.query("words", newest(after: 25)).elements.map(\.key) == ["tree"])
            try await changeIndex(drop: true)
            #expect(try await store.query("words", newest(after: 0)).elements.map(\.key) == ["tree", "sun"])
        }
    }
}
