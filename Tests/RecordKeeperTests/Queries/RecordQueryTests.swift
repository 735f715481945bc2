import Foundation
import RecordKeeper
import TestHelpers
import Testing

@Suite struct RecordQueryTests {
    /// Puts each `(key, json)` into `collection`.
    static func fill(_ store: RecordStore, _ rows: [(String, String)], in collection: String = "items") async throws {
        var upserts: [String: Data] = [:]
        for (key, json) in rows { upserts[key] = Data(json.utf8) }
        _ = try await store.apply(collection, changes: RecordChanges(upserts: upserts))
    }

    static let rows: [(String, String)] = [
        ("a", #"{"n":1,"s":"apple","tag":"x","nested":{"city":"Oslo"}}"#),
        ("b", #"{"n":2.5,"s":"apricot","tag":null,"nested":{"city":"Bergen"}}"#),
        ("c", #"{"n":3,"s":"banana","flag":true}"#),
        ("d", #"{"n":"3","s":"Apple","flag":false}"#),
        ("e", #"{"s":"ápple"}"#),
    ]

    func keys(_ store: RecordStore, _ predicate: RecordPredicate?, order: [RecordOrder] = []) async throws -> [String] {
        try await store.query("items", RecordQuery(where: predicate, orderBy: order)).elements.map(\.key)
    }

    @Test(arguments: StoreKind.allCases)
    func `comparisons compare numbers numerically and never convert kinds`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.fill(store, Self.rows)
            let n = RecordField("n")
            #expect(try await keys(store, n == 3) == ["c"])
            #expect(try await keys(store, n == "3") == ["d"])
            #expect(try await keys(store, n != 3) == ["a", "b", "d", "e"])
            #expect(try await keys(store, n < 3) == ["a", "b"])
            #expect(try await keys(store, n <= 3) == ["a", "b", "c"])
            #expect(try await keys(store, n > 1) == ["b", "c", "d"])  // text sorts after numbers
            #expect(try await keys(store, n >= 2.5) == ["b", "c", "d"])
            #expect(try await keys(store, n.between(2, 3)) == ["b", "c"])
            #expect(try await keys(store, n.in([1, 3, "3"])) == ["a", "c", "d"])
            #expect(try await keys(store, n.in([])) == [])
            #expect(try await keys(store, RecordField("flag") == true) == ["c"])
            #expect(try await keys(store, RecordField("flag") == false) == ["d"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `strings compare by code point and prefixes are exact`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.fill(store, Self.rows)
            let s = RecordField("s")
            #expect(try await keys(store, s.hasPrefix("ap")) == ["a", "b"])
            #expect(try await keys(store, s.hasPrefix("")) == ["a", "b", "c", "d", "e"])
            #expect(try await keys(store, s.hasPrefix("á")) == ["e"])
            #expect(try await keys(store, s < "apple") == ["d"])  // "A" < "a"
            #expect(try await keys(store, nil, order: [s.ascending]) == ["d", "a", "b", "c", "e"])
            // An array or object field reads as its JSON text, but is no string.
            try await Self.fill(store, [("f", #"{"s":["apple"]}"#), ("g", #"{"s":{"apple":1}}"#)])
            #expect(try await keys(store, s.hasPrefix("[")) == [])
            #expect(try await keys(store, s.hasPrefix("{")) == [])
            #expect(try await keys(store, s.hasPrefix("")) == ["a", "b", "c", "d", "e"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `contains matches array elements as == compares, never a scalar, an object or a substring`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.fill(store, [
                ("a", #"{"v":[1,"2",true,null]}"#),
                ("b", #"{"v":"1"}"#),
                ("c", #"{"v":[[1],{"x":1},"[1]"]}"#),
                ("d", #"{"v":[2.0,"one"]}"#),
                ("e", #"{"w":[1]}"#),
                ("f", #"{"v":[true]}"#),
            ])
            let v = RecordField("v")
            // true is 1, as == reads it (docs/QUERIES.md "How values compare").
            #expect(try await keys(store, v.contains(1)) == ["a", "f"])
            #expect(try await keys(store, v.contains("2")) == ["a"], "the string, not the number")
            #expect(try await keys(store, v.contains(2)) == ["d"], "2 equals 2.0")
            #expect(try await keys(store, v.contains(true)) == ["a", "f"])
            #expect(try await keys(store, v.contains(.null)) == ["a"])
            #expect(try await keys(store, v.contains("1")) == [], "a string field is not an array of it")
            #expect(try await keys(store, v.contains("[1]")) == ["c"], "a nested array is not its JSON text")
            #expect(try await keys(store, v.contains("on")) == [])
            #expect(try await keys(store, !v.contains(1)) == ["b", "c", "d", "e"])
            #expect(try await keys(store, RecordField("v") == true) == [], "an array is not its element")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `missing and null fields, nested paths and boolean logic`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.fill(store, Self.rows)
            let tag = RecordField("tag"), city = RecordField("nested.city")
            #expect(try await keys(store, tag.isNull) == ["b", "c", "d", "e"])
            #expect(try await keys(store, tag == nil) == ["b", "c", "d", "e"])
            #expect(try await keys(store, tag.exists) == ["a"])
            #expect(try await keys(store, city == "Bergen") == ["b"])
            #expect(try await keys(store, !(RecordField("n") < 3)) == ["c", "d", "e"])
            #expect(try await keys(store, city == "Oslo" || RecordField("flag") == true) == ["a", "c"])
            #expect(try await keys(store, RecordField("n") >= 1 && RecordField("s").hasPrefix("b")) == ["c"])
            #expect(try await keys(store, .and([])) == ["a", "b", "c", "d", "e"])
            #expect(try await keys(store, .or([])) == [])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `ordering by several fields breaks ties by key in the last field's direction`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.fill(store, [
                ("k1", #"{"g":1,"v":5}"#), ("k2", #"{"g":2,"v":5}"#), ("k3", #"{"g":1,"v":7}"#),
                ("k4", #"{"g":1,"v":5}"#), ("k5", #"{"v":5}"#),
            ])
            let g = RecordField("g"), v = RecordField("v")
            #expect(try await keys(store, nil, order: [g.ascending, v.descending]) == ["k5", "k3", "k4", "k1", "k2"])
            #expect(try await keys(store, nil, order: [g.descending, v.ascending]) == ["k2", "k1", "k4", "k3", "k5"])
            #expect(try await keys(store, nil, order: [v.ascending]) == ["k1", "k2", "k4", "k5", "k3"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `count and exists answer without rows`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            #expect(try await store.count("items") == 0)
            #expect(try await store.exists("items") == false)
            try await Self.fill(store, Self.rows)
            #expect(try await store.count("items") == 5)
            #expect(try await store.count("items", where: RecordField("n") < 3) == 2)
            #expect(try await store.exists("items", where: RecordField("s") == "banana"))
            #expect(try await store.exists("items", where: RecordField("s") == "cherry") == false)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keyset pages stay right while others write between them`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.fill(store, (0..<10).map { ("k\($0)", #"{"rank":\#($0 % 4)}"#) })
            var query = RecordQuery(orderBy: [RecordField("rank").descending], limit: 3)
            var seen: [String] = []
            var pages = 0
            repeat {
                let page = try await store.query("items", query)
                seen += page.elements.map(\.key)
                pages += 1
                // Between pages: a record before the position moves behind it and one appears
                // before; neither changes what the rest of the pages give.
                if pages == 1 {
                    try await Self.fill(store, [("k0", #"{"rank":3}"#), ("new", #"{"rank":9}"#)])
                }
                query.after = page.next
            } while query.after != nil
            // Order: rank desc, key desc. Initially: 3: k7 k3; 2: k6 k2; 1: k9 k5 k1; 0: k8 k4 k0.
            #expect(seen == ["k7", "k3", "k6", "k2", "k9", "k5", "k1", "k8", "k4"])
            #expect(pages == 4)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a page token from another order and a non-positive limit are refused`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.fill(store, Self.rows)
            let page = try await store.query("items", RecordQuery(orderBy: [RecordField("n").ascending], limit: 2))
            let token = try #require(page.next)
            #expect(QueryPageToken(text: token.text) == token)
            // A sort value SQLite reads as infinite (1e999) still makes a token, and it pages on.
            try await Self.fill(store, [("x", #"{"big":1e999}"#), ("y", #"{"big":-1e999}"#), ("z", #"{"big":1}"#)], in: "big")
            var keysByPage: [[String]] = []
            var after: QueryPageToken?
            repeat {
                let query = RecordQuery(orderBy: [RecordField("big").ascending], limit: 1, after: after)
                let page = try await store.query("big", query)
                keysByPage.append(page.elements.map(\.key))
                after = try page.next.map { try #require(QueryPageToken(text: $0.text)) }
                if let after, let next = page.next { #expect(after == next) }
            } while after != nil && keysByPage.count < 5
            #expect(keysByPage.flatMap { $0 } == ["y", "z", "x"])
            let error = await #expect(throws: QueryError.self) {
                try await store.query("items", RecordQuery(orderBy: [RecordField("s").ascending], after: token))
            }
            #expect(error?.code == .invalidArgument)
            // An app shows `localizedDescription`: the same sentence as `description`.
            #expect(error?.localizedDescription == error?.description)
            #expect(error?.localizedDescription.hasPrefix("Could not query collection \"items\"") == true)
            await #expect(throws: QueryError.self) { try await store.query("items", RecordQuery(limit: 0)) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `nil as a bound of an ordering comparison is refused, not a query that matches nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("items", key: "a", data: Data(#"{"due":1}"#.utf8))
            let due = RecordField("due")
            for predicate in [
                due < nil, due >= nil, RecordPredicate.between(try FieldPath("due"), .null, 5),
                .or([due == 1, .not(due > nil)]),
            ] {
                let error = await #expect(throws: QueryError.self) { try await store.query("items", RecordQuery(where: predicate)) }
                #expect(error?.code == .invalidArgument, "\(predicate)")
                #expect(error?.description.contains("nil matches no record") == true, "\(String(describing: error))")
                await #expect(throws: QueryError.self) { try await store.count("items", where: predicate) }
            }
            // Equality with nil is the question "is it missing?", and stays allowed.
            #expect(try await store.count("items", where: due == nil) == 0)
            #expect(try await store.count("items", where: due != nil) == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a query over a collection holding a payload that is not JSON says so, and a key-only query still answers`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("items", key: "a", data: Data(#"{"n":1}"#.utf8))
            try await store.put("items", key: "b", data: Data("plain bytes".utf8))
            for read in [
                { _ = try await store.query("items", RecordQuery(where: RecordField("n") == 1)) },
                { _ = try await store.count("items", where: RecordField("n") == 1) },
            ] as [@Sendable () async throws -> Void] {
                let error = await #expect(throws: RecordStoreError.self) { try await read() }
                #expect(error?.code == .invalidArgument)
                #expect(error?.sqliteMessage == "malformed JSON")
                #expect(error?.description.contains("is not JSON") == true)
                #expect(error?.key == "b", "the first record that is not JSON")
                #expect(error?.recoverySuggestion == "Store that record as JSON or remove it, then query again; nothing was changed.")
            }
            #expect(try await store.query("items", RecordQuery()).elements.map(\.key) == ["a", "b"])
        }
    }

    @Test func `field paths that a JSON path could misread are refused`() throws {
        for bad in ["", "a..b", "a[0]", "a'b", "$.a", "a b", "ä"] {
            #expect(throws: QueryError.self) { try FieldPath(bad) }
        }
        #expect(try FieldPath("address.city_2").segments == ["address", "city_2"])
    }

    @Test(arguments: StoreKind.allCases)
    func `dates compare as the collection's recorded strategy writes them`(kind: StoreKind) async throws {
        struct Entry: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var at: Date
        }
        try await withStore(kind) { store, _ in
            let entries = RecordRepository<Entry>(store: store, collection: "items", strategies: .init(dates: .iso8601))
            let start = Date(timeIntervalSince1970: 1_700_000_000)
            try await entries.save((0..<4).map { Entry(id: "e\($0)", at: start + Double($0) * 86_400) })
            let after = RecordField("at") >= .date(start + 86_400 * 2)
            #expect(try await keys(store, after) == ["e2", "e3"])
            // Stored ISO 8601 dates keep whole seconds: a bound with a fraction moves to the
            // whole second that answers the same for every stored date.
            #expect(try await keys(store, RecordField("at") >= .date(start + 86_400 - 0.5)) == ["e1", "e2", "e3"])
            #expect(try await keys(store, RecordField("at") > .date(start + 86_400 + 0.5)) == ["e2", "e3"])
            #expect(try await keys(store, RecordField("at") <= .date(start + 86_400 + 0.5)) == ["e0", "e1"])
            #expect(try await keys(store, RecordField("at") == .date(start + 0.5)) == [])
            #expect(try await keys(store, RecordField("at") != .date(start + 0.5)) == ["e0", "e1", "e2", "e3"])
            // An array of such dates contains no date with a fraction, as == says.
            struct Diary: Codable, Identifiable, Equatable, Sendable {
                var id: String
                var days: [Date]
            }
            let diaries = RecordRepository<Diary>(store: store, collection: "diaries", strategies: .init(dates: .iso8601))
            try await diaries.save(Diary(id: "d", days: [start, start + 1]))
            let days = RecordField("days")
            #expect(try await store.query("diaries", RecordQuery(where: days.contains(.date(start + 1)))).elements.map(\.key) == ["d"])
            #expect(try await store.query("diaries", RecordQuery(where: days.contains(.date(start + 1.5)))).elements.isEmpty)
            #expect(try await store.query("diaries", RecordQuery(where: !days.contains(.date(start + 1.5)))).elements.map(\.key) == ["d"])
            // A date no payload can hold (an infinite one, written as seconds) is refused naming
            // the collection, on the untyped path as on the typed one.
            try await Self.fill(store, [("p", #"{"at":1}"#)], in: "plain")
            let error = await #expect(throws: QueryError.self) {
                try await store.count("plain", where: RecordField("at") < .date(Date(timeIntervalSinceReferenceDate: .infinity)))
            }
            #expect(error?.code == .unencodableValue)
            #expect(error?.collection == "plain")
        }
    }
}
