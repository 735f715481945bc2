/// The shape of a query: everything its SQL text depends on, without the values it binds.
///
/// Two queries of one shape have the same SQL text and bind their values in the same
/// positions, so the text built for the first is bound with the values of the second (see
/// `RecordQueries.querySQL`). The shape is the query with every value replaced by a
/// placeholder that keeps only what the text depends on (`null` or not: `= ?` becomes
/// `IS NULL`; how many values an `in` holds; whether a prefix has a successor; whether there
/// is a limit), plus the collection id written into the text, the declared indexes the text
/// was chosen for (`INDEXED BY`) and what the statement answers.
struct QueryShapeKey: Hashable {
    let collectionID: Int64
    let indexed: [FieldPath]
    let shape: QuerySQL.Shape
    let query: RecordQuery

    init(_ query: RecordQuery, collectionID: Int64, indexed: [FieldPath], shape: QuerySQL.Shape) {
        self.collectionID = collectionID
        self.indexed = indexed
        self.shape = shape
        var outline = RecordQuery(orderBy: query.order, limit: query.limit.map { _ in 1 })
        outline.predicate = query.predicate.map(Self.outline)
        if shape == .rows, let token = query.after {
            outline.after = QueryPageToken(order: "", values: token.values.map(Self.placeholder), key: "")
        }
        self.query = outline
    }

    /// `null` stays `null` (it renders differently); every other value is one placeholder.
    private static func placeholder(_ value: QueryValue) -> QueryValue { value == .null ? .null : .integer(0) }

    private static func outline(_ predicate: RecordPredicate) -> RecordPredicate {
        switch predicate {
        case .compare(let field, let comparison, let value): .compare(field, comparison, placeholder(value))
        case .between(let field, let lower, let upper): .between(field, placeholder(lower), placeholder(upper))
        case .isIn(let field, let values): .isIn(field, values.map(placeholder))
        // A prefix has a successor (a second bound) unless it is all U+10FFFF (or empty).
        case .hasPrefix(let field, let prefix):
            .hasPrefix(field, prefix.unicodeScalars.allSatisfy { $0.value == 0x10FFFF } ? "" : "a")
        case .isNull: predicate
        case .contains(let field, let element): .contains(field, placeholder(element))
        case .and(let all): .and(all.map(outline))
        case .or(let all): .or(all.map(outline))
        case .not(let inner): .not(outline(inner))
        }
    }
}

extension QuerySQL {
    /// The values `QuerySQL(query, …, shape: shape)` binds, in its order, without building its
    /// text: what a statement of the query's shape is bound with. Mirrors `render`, `keyset`
    /// and the limit of `init` value for value; `RecordQueries.querySQL` checks the two agree
    /// for every shape before it keeps one.
    static func boundValues(of query: RecordQuery, shape: Shape) -> [QueryValue] {
        var values: [QueryValue] = []
        if let predicate = query.predicate { appendValues(of: predicate, to: &values) }
        if shape == .rows {
            if let token = query.after {
                for value in token.values {
                    if value != .null { values.append(value) }  // after it on this key
                    values.append(value)  // equal on this key
                }
                values.append(.string(token.key))
            }
            if let limit = query.limit { values.append(.integer(Int64(limit))) }
        }
        return values
    }

    private static func appendValues(of predicate: RecordPredicate, to values: inout [QueryValue]) {
        switch predicate {
        case .compare(_, let comparison, let value):
            if value == .null, comparison == .equal || comparison == .notEqual { return }  // IS [NOT] NULL
            values.append(value)
        case .between(_, let lower, let upper):
            values.append(lower)
            values.append(upper)
        case .isIn(_, let members):
            for member in members where member != .null { values.append(member) }
        case .hasPrefix(_, let prefix):
            values.append(.string(prefix))
            if let upper = successor(of: prefix) { values.append(.string(upper)) }
        case .contains(_, let element):
            if element != .null { values.append(element) }
        case .isNull:
            return
        case .and(let all), .or(let all):
            for member in all { appendValues(of: member, to: &values) }
        case .not(let inner):
            appendValues(of: inner, to: &values)
        }
    }

    /// True when `values` bind as `other` do: the same values in the same positions (doubles
    /// by their bits, so a NaN agrees with itself).
    static func sameBindings(_ values: [QueryValue], _ other: [QueryValue]) -> Bool {
        values.count == other.count
            && zip(values, other).allSatisfy { pair in
                switch pair {
                case (.double(let left), .double(let right)): left.bitPattern == right.bitPattern
                default: pair.0 == pair.1
                }
            }
    }
}
