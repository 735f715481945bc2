import Dispatch
import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// A short walk of a declared index runs inline on the caller's thread, like a point read;
/// every other query runs on the store's executor.
@Suite(.disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
struct InlineQueryTests {
    static let at = RecordField("at"), n = RecordField("n")
    static let short: [RecordQuery] = [
        RecordQuery(orderBy: [at.descending], limit: 20),
        RecordQuery(where: at >= 100 && at < 200, orderBy: [at.ascending], limit: 100),
        RecordQuery(where: at.between(10, 20), orderBy: [at.descending], limit: 5),
    ]
    static let long: [RecordQuery] = [
        RecordQuery(orderBy: [at.descending]),  // no limit: every record
        RecordQuery(orderBy: [at.descending], limit: 101),
        RecordQuery(where: n == 1, orderBy: [at.descending], limit: 20),  // walks until 20 match
        RecordQuery(orderBy: [n.descending], limit: 20),  // undeclared: a scan and a sort
        RecordQuery(where: at > 10, orderBy: [at.ascending, n.ascending], limit: 20),
        RecordQuery(where: at != 10, orderBy: [at.ascending], limit: 20),
        RecordQuery(where: at >= 100, limit: 20),  // not in the index's order
    ]

    static func fill(_ store: RecordStore) async throws {
        let values = (0..<300).map { ("k\($0)", Data(#"{"at":\#(($0 * 7) % 300),"id":"k\#($0)","n":\#($0 % 5)}"#.utf8)) }
        try await store.replace("entries", values: Dictionary(uniqueKeysWithValues: values))
        try await store.declareIndex("entries", on: FieldPath("at"))
    }

    @Test func `only a first page of at most 100 rows in a declared index’s order counts as short`() throws {
        let indexed = [try FieldPath("at")]
        for query in Self.short {
            #expect(QuerySQL(query, collectionID: 1, indexed: indexed, shape: .rows).isShortIndexWalk(query), "\(query)")
        }
        for query in Self.long {
            #expect(!QuerySQL(query, collectionID: 1, indexed: indexed, shape: .rows).isShortIndexWalk(query), "\(query)")
        }
        let page = RecordQuery(orderBy: [Self.at.descending], limit: 20, after: QueryPageToken(order: "at:desc", values: [5], key: "k1"))
        #expect(!QuerySQL(page, collectionID: 1, indexed: indexed, shape: .rows).isShortIndexWalk(page))
        #expect(!QuerySQL(Self.short[0], collectionID: 1, indexed: [], shape: .rows).isShortIndexWalk(Self.short[0]))
    }

    /// An inline attempt may be refused at a given moment (a lock another connection holds,
    /// which SQLite reports at once with the busy handler off) and then runs on the executor:
    /// the contract is "inline when free". So each try holds every reader's queue until it
    /// answers or 5 s pass (then releases them, so a query that went there finishes), and the
    /// test passes only when a try answered before its release, up to 5 tries. On code that
    /// never runs queries inline, every try waits for its release and the test fails.
    @Test(.timeLimit(.minutes(2))) func `a short query answers inline while every reader’s queue is busy`() async throws {
        try await withStore(.onDisk) { store, _ in
            try await Self.fill(store)
            let expected = try await store.query("entries", Self.short[0]).elements.map(\.key)
            let repository = RecordRepository<Entry>(store: store, collection: "entries")
            var answeredInline = false
            for _ in 0..<5 where !answeredInline {
                let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
                let released = Protected(false)
                // The gate: every reader's queue runs nothing else meanwhile (their locks stay
                // free, so a query may still answer inline on the caller's thread).
                let readers = try #require(store.core.readers).readers
                for reader in readers {
                    reader.executor.run {
                        entered.signal()
                        release.wait()
                    }
                }
                for _ in readers { await wait(for: entered) }
                let deadline = Task {
                    // Cancelled once the queries answered: then nothing to release here.
                    guard (try? await Task.sleep(for: .seconds(5))) != nil else { return }
                    released.withLock { $0 = true }
                    release.signal()
                }
                let keys = try await store.query("entries", Self.short[0]).elements.map(\.key)
                let ids = try await repository.query(orderBy: [Entry.at.descending], limit: 20).elements.map(\.id)
                answeredInline = released.withLock { !$0 }
                #expect(keys == expected)
                #expect(ids == expected)
                deadline.cancel()
                if answeredInline { release.signal() }
                _ = await deadline.result
                for _ in readers.dropFirst() { release.signal() }
            }
            #expect(answeredInline, "no try answered before the readers' queues were released")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `inline and executor queries give the same answers, and a refused attempt is no failure`(kind: StoreKind) async throws {
        let log = EventLog()
        try await withStore(kind, options: .init(eventHandler: { log.append($0) })) { store, _ in
            try await Self.fill(store)
            for query in Self.short + Self.long {
                let page = try await store.query("entries", query)
                let all = try await store.query("entries", RecordQuery(where: query.predicate, orderBy: query.order))
                #expect(page.elements.map(\.key) == Array(all.elements.map(\.key).prefix(query.limit ?? .max)), "\(query)")
            }
            let failed = log.all.filter {
                if case .request(_, _, _, succeeded: false) = $0 { return true }
                return false
            }
            #expect(failed.isEmpty)
        }
    }

    struct Entry: Codable, Sendable, Identifiable, Equatable, Queryable {
        var id: String
        var at: Int
        var n: Int
        static let at = Field<Entry, Int>("at")
        static let queryFields: [any QueryField] = [at]
    }
}
