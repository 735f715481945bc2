import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// What queries keep between calls on a connection (prepared statements by their SQL text, the
/// declared indexes per collection under the schema cookie) never changes an answer.
@Suite struct QueryCacheTests {
    static let newest = RecordQuery(orderBy: [RecordField("dueAt").descending], limit: 2)

    @Test func `an index dropped or declared by another process is seen by the next query`() async throws {
        let tool = try #require(BuildProducts.executable(named: "recordkeeper"), "the recordkeeper binary is not in the build products")
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.replace("words", values: FormatSevenFixture.words)
            try await store.declareIndex("words", on: FieldPath("dueAt"))
            // Kept on this store's reader: the statement naming the index and the index list.
            #expect(try await store.query("words", Self.newest).elements.map(\.key) == ["tree", "sun"])
            #expect(DeclaredIndexTests.usesIndex(try await store.queryPlan("words", Self.newest)))

            let dropped = try await ChildProcess.run(tool, ["--store", url.path, "index", "words", "--drop", "dueAt"], in: directory)
            #expect(dropped.status == 0, "\(dropped.stderr)")
            // A query still naming the dropped index would fail ("no such index").
            #expect(try await store.query("words", Self.newest).elements.map(\.key) == ["tree", "sun"])
            #expect(try await store.count("words", where: RecordField("dueAt") >= 20) == 2)
            #expect(!DeclaredIndexTests.usesIndex(try await store.queryPlan("words", Self.newest)))

            let declared = try await ChildProcess.run(tool, ["--store", url.path, "index", "words", "--add", "dueAt"], in: directory)
            #expect(declared.status == 0, "\(declared.stderr)")
            #expect(DeclaredIndexTests.usesIndex(try await store.queryPlan("words", Self.newest)))
            #expect(try await store.query("words", Self.newest).elements.map(\.key) == ["tree", "sun"])
            await store.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an index dropped through another store or this one is no longer used`(kind: StoreKind) async throws {
        try await withStore(kind) { store, url in
            try await store.replace("words", values: FormatSevenFixture.words)
            try await store.declareIndex("words", on: FieldPath("dueAt"))
            #expect(try await store.query("words", Self.newest).elements.map(\.key) == ["tree", "sun"])
            if kind == .onDisk {
                let other = RecordStore(url: url)
                #expect(try await other.dropIndex("words", on: FieldPath("dueAt")))
                await other.close()
            } else {
                #expect(try await store.dropIndex("words", on: FieldPath("dueAt")))
            }
            #expect(try await store.query("words", Self.newest).elements.map(\.key) == ["tree", "sun"])
            #expect(!DeclaredIndexTests.usesIndex(try await store.queryPlan("words", Self.newest)))
            // Removing the collection drops its indexes; a new one may get the same id.
            try await store.declareIndex("words", on: FieldPath("dueAt"))
            try await store.removeCollection("words")
            try await store.replace("words", values: FormatSevenFixture.words)
            #expect(!DeclaredIndexTests.usesIndex(try await store.queryPlan("words", Self.newest)))
            #expect(try await store.query("words", Self.newest).elements.map(\.key) == ["tree", "sun"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a query reused with other values answers for those values`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("words", values: FormatSevenFixture.words)
            try await store.declareIndex("words", on: FieldPath("dueAt"))
            let dueAt = RecordField("dueAt")
            let cases: [(QueryValue, [String])] = [(15, ["tree", "sun"]), (25, ["tree"]), (5, ["tree", "sun", "run"]), (31, [])]
            for (bound, keys) in cases {
                let query = RecordQuery(where: dueAt >= bound, orderBy: [dueAt.descending])
                #expect(try await store.query("words", query).elements.map(\.key) == keys, "dueAt >= \(bound)")
                #expect(try await store.count("words", where: dueAt >= bound) == keys.count, "dueAt >= \(bound)")
            }
            // The limit is bound too, and a page token's values.
            for limit in [1, 2, 3] {
                let page = try await store.query("words", RecordQuery(orderBy: [dueAt.descending], limit: limit))
                #expect(page.elements.map(\.key) == Array(["tree", "sun", "run"].prefix(limit)))
            }
            let paged = try await DeclaredIndexTests.keysPageByPage(store, "words", RecordQuery(orderBy: [dueAt.ascending], limit: 1))
            #expect(paged == ["run", "sun", "tree"])
        }
    }

    @Test func `a connection keeps a bounded number of query statements and drops one that failed`() async throws {
        let connection = try SQLiteConnection(path: nil, busyTimeout: .seconds(1))
        try connection.execute("CREATE TABLE t (v INTEGER)")
        try connection.execute("INSERT INTO t VALUES (1), (2), (3)")
        func count(above bound: Int) throws -> Int64 {
            try connection.withQueryStatement("SELECT count(*) FROM t WHERE v > ?1 AND \(bound % 40) = \(bound % 40)") { statement in
                try statement.bind(Int64(bound % 3), at: 1)
                return try statement.step() ? statement.int64(at: 0) : -1
            }
        }
        for bound in 0..<(SQLiteConnection.queryStatementLimit + 8) { _ = try count(above: bound) }
        #expect(connection.queryStatementCount == SQLiteConnection.queryStatementLimit)
        #expect(try count(above: 1) == 2)
        #expect(try count(above: 2) == 1)
        struct Refused: Error {}
        let text = "SELECT v FROM t ORDER BY v"
        #expect(throws: Refused.self) { try connection.withQueryStatement(text) { _ in throw Refused() } }
        #expect(connection.queryStatementCount == SQLiteConnection.queryStatementLimit - 1)
        #expect(throws: SQLiteFailure.self) { try connection.withQueryStatement("SELECT nothing FROM nowhere") { _ in 0 } }
        #expect(connection.queryStatementCount == SQLiteConnection.queryStatementLimit - 1)
    }
}
