import Foundation
import GRDB
import RecordKeeper

/// The item of Q1/Q2 on both sides: RecordKeeper stores it as JSON in collection `entries`
/// with `at` declared (an expression index over the payload); GRDB maps it to the four columns
/// of table `entry` with a real index on column `at`.
struct Entry: Codable, Sendable, Identifiable, Equatable, FetchableRecord, TableRecord, RecordKeeper.Queryable {
    static let databaseTableName = "entry"
    var id: String
    var title: String
    var count: Int
    /// Milliseconds since 1970, a permutation of the indexes (so key order and `at` order differ).
    var at: Int

    static let atField = RecordKeeper.Field<Entry, Int>("at")
    static let queryFields: [any QueryField] = [atField]
    static let baseAt = 1_780_000_000_000
    static let collection = "entries"

    /// Item `index` of N, the same values as recordkeeper-bench's Q1/Q2 `Entry.make`.
    static func make(_ index: Int, n: Int) -> Entry {
        Entry(id: Dataset.key(index), title: "Entry \(index) of the bench collection", count: index &* 7,
              at: baseAt + ((index &* 7_919) % n) * 1_000)
    }
}

/// Q1/Q2 (RecordKeeper issue 23): the 20 newest entries by an indexed field, decoded to
/// structs, and the count of a range of a tenth of them. GRDB through its query interface on a
/// table with a real column index (`Entry.order(Column("at").desc).limit(20).fetchAll(db)`,
/// `Entry.filter((lower...upper).contains(Column("at"))).fetchCount(db)`) in
/// `try await dbQueue.read { }`; RecordKeeper through `RecordRepository<Entry>.query(orderBy:limit:)`
/// and `count(where:)` with `at` declared, as recordkeeper-bench's Q1/Q2. The sides alternate
/// query by query (the first side rotates), `queries` of each per repeat; each repeat records
/// the p50 of its queries.
extension Runner {
    var grdbEntries: String { path("grdb-entries.sqlite") }
    var rkEntries: String { path("rk-entries.sqlite") }

    /// The two stores of N entries (untimed), built once per run; both sides' plans are checked
    /// to name their index.
    func queryFixtures() async throws -> (DatabaseQueue, RecordStore, RecordRepository<Entry>) {
        let n = options.n
        if !FileManager.default.fileExists(atPath: grdbEntries) || !FileManager.default.fileExists(atPath: rkEntries) {
            progress("[bench] building Q fixtures, N=\(n)")
            removeStore(grdbEntries)
            removeStore(rkEntries)
            let entries = (0..<n).map { Entry.make($0, n: n) }
            let queue = try GRDBSide.open(path: grdbEntries)
            try await queue.write { db in
                try db.create(table: Entry.databaseTableName) { t in
                    t.primaryKey("id", .text)
                    t.column("title", .text).notNull()
                    t.column("count", .integer).notNull()
                    t.column("at", .integer).notNull()
                }
                let insert = try db.cachedStatement(sql: "INSERT INTO entry(id, title, count, at) VALUES (?, ?, ?, ?)")
                for entry in entries { try insert.execute(arguments: [entry.id, entry.title, entry.count, entry.at]) }
                try db.create(index: "entry_at", on: Entry.databaseTableName, columns: ["at"])
            }
            try queue.close()
            let building = RKSide.makeStore(path: rkEntries)
            let repository = RecordRepository<Entry>(store: building, collection: Entry.collection)
            try await repository.save(entries)
            try await repository.declareIndexes([Entry.atField])
            await building.close()
        }
        let queue = try GRDBSide.open(path: grdbEntries)
        try GRDBSide.checkSettings(queue)
        let store = RKSide.makeStore(path: rkEntries)
        try await store.write { _ in }
        let rkPlan = try await store.queryPlan(
            Entry.collection, RecordQuery(orderBy: [RecordField("at").descending], limit: 20))
        guard rkPlan.contains(where: { $0.contains("USING INDEX declared_") }) else {
            throw BenchFailure("Q RecordKeeper does not use its declared index: \(rkPlan)")
        }
        let grdbPlan = try await queue.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT * FROM entry ORDER BY at DESC LIMIT 20")
                .map { $0["detail"] as String }
        }
        guard grdbPlan.contains(where: { $0.contains("entry_at") }) else {
            throw BenchFailure("Q GRDB does not use index entry_at: \(grdbPlan)")
        }
        return (queue, store, RecordRepository<Entry>(store: store, collection: Entry.collection))
    }

    /// Runs `grdb` and `rk` `options.queries` times each per repeat, alternating, and records
    /// each repeat's p50 in microseconds.
    private func alternate(
        _ workload: String, note: String, grdb: () async throws -> Void, rk: () async throws -> Void
    ) async throws {
        for repeatIndex in 0..<options.repeats {
            var times: [Impl: [Double]] = [:]
            for number in 0..<options.queries {
                for impl in order([.grdb, .rk], repeat: repeatIndex + number) {
                    times[impl, default: []].append(try await measureAsync { try await (impl == .rk ? rk() : grdb()) })
                }
            }
            for (impl, samples) in times {
                recorder.add(workload, "p50_us", impl, Stats.percentile(samples, 0.5) * 1e6, note: note)
            }
        }
    }

    // MARK: Q1

    func runQ1() async throws {
        let limit = 20
        progress("[bench] Q1 the \(limit) newest entries by indexed at, N=\(options.n), \(options.queries) per side per repeat")
        let (queue, store, repository) = try await queryFixtures()
        func grdbNewest() async throws -> [Entry] {
            try await queue.read { db in try Entry.order(Column("at").desc).limit(limit).fetchAll(db) }
        }
        func rkNewest() async throws -> [Entry] {
            try await repository.query(orderBy: [Entry.atField.descending], limit: limit).elements
        }
        let expected = try await grdbNewest()
        guard expected.count == min(limit, options.n), try await rkNewest() == expected else {
            throw BenchFailure("Q1 GRDB and RecordKeeper disagree on the \(limit) newest entries")
        }
        try await alternate("Q1", note: "20 newest of N, decoded", grdb: { _ = try await grdbNewest() }, rk: { _ = try await rkNewest() })
        try queue.close()
        await store.close()
    }

    // MARK: Q2

    func runQ2() async throws {
        let n = options.n
        // `at` runs over baseAt + i * 1,000 (i < N): this range holds a tenth of the entries.
        let first = n / 3, width = max(1, n / 10)
        let lower = Entry.baseAt + first * 1_000, upper = Entry.baseAt + (first + width - 1) * 1_000
        progress("[bench] Q2 count of \(width) of N=\(n) by an indexed range, \(options.queries) per side per repeat")
        let (queue, store, repository) = try await queryFixtures()
        func grdbCount() async throws -> Int {
            try await queue.read { db in try Entry.filter((lower...upper).contains(Column("at"))).fetchCount(db) }
        }
        func rkCount() async throws -> Int {
            try await repository.count(where: Entry.atField.between(lower, upper))
        }
        let expected = try await grdbCount()
        guard expected == width, try await rkCount() == expected else {
            throw BenchFailure("Q2 GRDB and RecordKeeper disagree on the count (GRDB \(expected), expected \(width))")
        }
        try await alternate("Q2", note: "count of \(width) of N", grdb: { _ = try await grdbCount() }, rk: { _ = try await rkCount() })
        try queue.close()
        await store.close()
    }
}
