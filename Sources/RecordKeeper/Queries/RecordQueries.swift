import Foundation

/// The gateway of queries over a collection's records (docs/QUERIES.md), on the connection
/// of one request: the SQL `QuerySQL` builds for a query and the collection's declared
/// indexes, kept per shape on the connection, its prepared statements, and reading a page, a
/// count or a plan. A query reads several tables in one snapshot, so this gateway works over
/// the engine (its read transaction, item versions and indexes), not over the runner alone.
struct RecordQueries {
    let engine: RecordEngine

    private var runner: StatementRunner { engine.runner }
    private var connection: SQLiteConnection { engine.connection }

    /// Runs `query` over the collection `name` in one read transaction, with the collection's
    /// recorded payload strategies (to write `.date` values as its payloads do). Nil when the
    /// collection is not established.
    func query<T>(
        _ name: String, _ query: RecordQuery, _ body: (RecordEngine, RecordQuery, Int64) throws -> T
    ) throws -> (StoredItemVersion, T?) {
        return try engine.readTransaction {
            let state = try engine.itemVersions.itemVersion(name)
            var result: T?
            if state != .absent, let id = try engine.records.collectionID(name) {
                let resolved = try Self.resolvingDates(query, state: state, collection: name)
                do {
                    result = try body(engine, resolved, id)
                } catch var error as RecordStoreError where error.sqliteMessage == "malformed JSON" && error.key == nil {
                    // A payload that is not JSON is in the store legitimately (payloads are any
                    // bytes), but its fields cannot be queried: name the first such record.
                    error.key = try engine.indexes.firstPayloadNotJSON(id, collection: name)
                    if error.key != nil {
                        error.detail = "the record's payload is not JSON, and a query reads the JSON fields of the "
                            + "collection's records, so this collection cannot be queried until it is JSON or removed"
                    }
                    throw error
                }
            }
            return (state, result)
        }
    }

    /// `query` with every `.date` written by the collection's recorded date strategy.
    static func resolvingDates(_ query: RecordQuery, state: StoredItemVersion, collection: String) throws -> RecordQuery {
        var coding: String?
        if case .recorded(_, let recorded) = state { coding = recorded }
        guard let strategies = RecordCoding.Strategies(recorded: coding) else {
            throw QueryError(
                .invalidArgument, fieldName: "", collection: collection,
                detail: "the collection's payload strategies \"\(coding ?? "")\" are not known to this version")
        }
        // Most queries hold no date: they are kept as they are, without a coder or a copy.
        guard query.predicate?.holdsDate == true else { return query }
        var query = query
        do {
            query.predicate = try query.predicate?.writingDates(
                with: PayloadCoder(.recordJSON, strategies: strategies), dates: strategies.dates)
        } catch var error as QueryError {
            error.collection = collection
            throw error
        }
        return query
    }

    /// The page of records `query` selects in collection `id`.
    ///
    /// In an inline attempt (on the caller's thread, `SQLiteConnection.refusesToWait`) it runs
    /// only a short walk of a declared index (`QuerySQL.isShortIndexWalk`); any other query is
    /// refused before a row is read (`InlineAttemptRefused`) and goes to a reader's queue.
    func queryRecords(_ query: RecordQuery, collectionID id: Int64, collection: String) throws -> QueryPage<StoredRecord> {
        let sql = try querySQL(query, collectionID: id, collection: collection, shape: .rows)
        if connection.refusesToWait, !sql.isShortIndexWalk(query) { throw InlineAttemptRefused() }
        return try runner.run(collection: collection) {
            try connection.withQueryStatement(sql.text) { statement in
                try bind(sql, to: statement)
                var records: [StoredRecord] = []
                var lastValues: [QueryValue] = []
                while try statement.step() {
                    records.append(try RecordsTable.storedRecord(statement, runner: runner, collection: collection))
                    if records.count == query.limit {
                        lastValues = (0..<query.order.count).map { statement.queryValue(at: Int32(3 + $0)) }
                    }
                }
                var next: QueryPageToken?
                if let limit = query.limit, records.count == limit, let last = records.last {
                    next = QueryPageToken(order: query.orderSignature, values: lastValues, key: last.key)
                }
                return QueryPage(elements: records, next: next)
            }
        }
    }

    /// How many records of collection `id` `query` selects (its order and pages ignored).
    func countRecords(_ query: RecordQuery, collectionID id: Int64, collection: String, shape: QuerySQL.Shape) throws -> Int {
        let sql = try querySQL(query, collectionID: id, collection: collection, shape: shape)
        return try runner.run(collection: collection) {
            try connection.withQueryStatement(sql.text) { statement in
                try bind(sql, to: statement)
                return try statement.step() ? Int(statement.int64(at: 0)) : 0
            }
        }
    }

    /// The query plan SQLite chooses for `query` (`EXPLAIN QUERY PLAN`, the detail column).
    func queryPlan(_ query: RecordQuery, collectionID id: Int64, collection: String) throws -> [String] {
        let sql = try querySQL(query, collectionID: id, collection: collection, shape: .rows)
        return try runner.run(collection: collection) {
            let statement = try Statement(
                connection: connection.handle, sql: "EXPLAIN QUERY PLAN " + sql.text, persistent: false)
            try bind(sql, to: statement)
            var details: [String] = []
            while try statement.step() { details.append(statement.string(at: 3)) }
            return details
        }
    }

    /// The SQL of `query` over collection `id` for its declared indexes: the text built before
    /// for a query of the same shape (`QueryShapeKey`) when there is one, bound with this
    /// query's values, else built now and kept for the shape. The shapes are kept with the
    /// declared indexes and forgotten with them (a change of the schema cookie, see
    /// `declaredIndexes`); the key holds the declared indexes too, so inside a write
    /// transaction, where they are read afresh, a shape built for other indexes is never used.
    func querySQL(_ query: RecordQuery, collectionID id: Int64, collection: String, shape: QuerySQL.Shape) throws -> QuerySQL {
        let indexed = try engine.indexes.declaredIndexes(id, collection: collection)
        let key = QueryShapeKey(query, collectionID: id, indexed: indexed, shape: shape)
        if let built = connection.querySQLCache[key] {
            return QuerySQL(text: built.text, values: QuerySQL.boundValues(of: query, shape: shape), index: built.index)
        }
        let sql = QuerySQL(query, collectionID: id, indexed: indexed, shape: shape)
        // The two must agree value for value; a shape they disagree on is built every time.
        let agrees = QuerySQL.sameBindings(sql.values, QuerySQL.boundValues(of: query, shape: shape))
        assert(agrees, "QuerySQL.boundValues disagrees with the SQL built for \(query)")
        if agrees {
            if connection.querySQLCache.count >= SQLiteConnection.querySQLLimit { connection.querySQLCache = [:] }
            connection.querySQLCache[key] = sql
        }
        return sql
    }

    /// Binds the values of `sql` to `statement`, a statement of its text.
    private func bind(_ sql: QuerySQL, to statement: Statement) throws {
        for (index, value) in sql.values.enumerated() { try statement.bind(queryValue: value, at: Int32(index + 1)) }
    }
}

extension Statement {
    /// Binds a resolved query value (`true` and `false` as 1 and 0, as SQLite's JSON
    /// functions read them).
    func bind(queryValue value: QueryValue, at index: Int32) throws(SQLiteFailure) {
        switch value {
        case .null: try bindNull(at: index)
        case .bool(let flag): try bind(Int64(flag ? 1 : 0), at: index)
        case .integer(let number): try bind(number, at: index)
        case .double(let number): try bind(double: number, at: index)
        case .string(let text): try bind(text, at: index)
        case .date(let date): try bind(double: date.timeIntervalSinceReferenceDate, at: index)  // resolved before binding
        }
    }

    /// A column of the current row as a query value.
    func queryValue(at column: Int32) -> QueryValue {
        switch kind(at: column) {
        case .null: .null
        case .integer: .integer(int64(at: column))
        case .real: .double(double(at: column))
        case .text, .blob: .string(string(at: column))
        }
    }
}
