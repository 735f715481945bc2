/// The SQL of one query, and the values it binds, in order.
///
/// Only the SQL text of this file, validated JSON paths (``FieldPath``: letters, digits and `_`
/// segments) and the collection's integer id are ever written into the text; every value a
/// caller gave (compared values, prefixes, page tokens, the limit) is a bound parameter. The
/// collection id is written as a literal, not bound, so that SQLite's planner can match the
/// partial indexes of declared fields (`WHERE collection_id = 7`, see `DeclaredIndex`), which it
/// cannot prove for a bound parameter.
struct QuerySQL {
    /// What the statement answers.
    enum Shape: Hashable {
        /// `key, payload, version`, then the value of each sort key.
        case rows
        /// One row: the number of matching records.
        case count
        /// One row: 1 when a record matches, else 0.
        case exists
    }

    private(set) var text = ""
    private(set) var values: [QueryValue] = []
    /// The declared field whose index the statement names (`INDEXED BY`), if any.
    private(set) var index: FieldPath?
    /// True once a condition rendered as the constant `0` (an empty `in` or `or`).
    private var rendersFalse = false

    /// A statement built before for a query of the same shape (see `QuerySQL+Shapes.swift`),
    /// with the values of this query.
    init(text: String, values: [QueryValue], index: FieldPath?) {
        self.text = text
        self.values = values
        self.index = index
    }

    /// The SQL of `query` (fields and values already resolved: no `.date` left) over the
    /// collection with id `collectionID`, whose `indexed` fields have a declared index.
    init(_ query: RecordQuery, collectionID: Int64, indexed: [FieldPath], shape: Shape) {
        var conditions = ["collection_id = \(collectionID)"]
        if let predicate = query.predicate { conditions.append(render(predicate)) }
        if let token = query.after, shape == .rows { conditions.append(keyset(after: token, order: query.order)) }
        var source = "FROM records"
        // SQLite refuses `INDEXED BY` in a statement whose condition it folds to false.
        if !rendersFalse, let field = Self.indexToUse(query, indexed: Set(indexed), shape: shape) {
            index = field
            source += " INDEXED BY \"\(DeclaredIndex(collectionID: collectionID, field: field).name)\""
        }
        let filter = source + " WHERE " + conditions.joined(separator: " AND ")
        switch shape {
        case .count:
            text = "SELECT count(*) " + filter
        case .exists:
            text = "SELECT EXISTS (SELECT 1 " + filter + ")"
        case .rows:
            let sortColumns = query.order.map { ", " + $0.field.sqlExpression }.joined()
            let ordering = query.order.map { $0.field.sqlExpression + ($0.descending ? " DESC" : " ASC") } + ["key" + (query.keyDescending ? " DESC" : " ASC")]
            text = "SELECT key, payload, version\(sortColumns) " + filter + " ORDER BY " + ordering.joined(separator: ", ")
            if let limit = query.limit { text += " LIMIT " + bind(.integer(Int64(limit))) }
        }
    }

    /// The declared index the statement names (`INDEXED BY`): the first condition of the
    /// predicate's top-level `and` that an index on its field answers (a comparison other than
    /// `!=`, `between`, `in`, a prefix), else the first sort key if it is indexed (rows come in
    /// order, and a limit stops early). Named rather than left to SQLite's planner because,
    /// without statistics, it often rates the primary key's `collection_id` prefix (which
    /// holds the payload) above a secondary index: a declared index is a promise to use it.
    /// Nil when the query has no such condition or sort key: the statement scans.
    static func indexToUse(_ query: RecordQuery, indexed: Set<FieldPath>, shape: Shape) -> FieldPath? {
        guard !indexed.isEmpty else { return nil }
        var conjuncts: [RecordPredicate] = query.predicate.map { [$0] } ?? []
        var searchable: [FieldPath] = []
        while !conjuncts.isEmpty {
            switch conjuncts.removeFirst() {
            case .and(let all): conjuncts.insert(contentsOf: all, at: 0)
            case .compare(let field, let comparison, _) where comparison != .notEqual: searchable.append(field)
            case .between(let field, _, _), .isIn(let field, _), .hasPrefix(let field, _), .isNull(let field):
                searchable.append(field)
            default: break
            }
        }
        if let field = searchable.first(where: indexed.contains) { return field }
        if shape == .rows, let first = query.order.first, indexed.contains(first.field) { return first.field }
        return nil
    }

    /// The most rows a query may ask for and still run inline (see `isShortIndexWalk`).
    static let inlineRowLimit = 100

    /// True when SQLite answers `query` by walking the named index from one end or from one
    /// bound, in order, and stops after at most `inlineRowLimit` rows: a first page
    /// (no page token) of at most that many rows ordered by one indexed field, whose
    /// conditions, if any, are all ranges on that field. Such a query reads about as many
    /// index entries and records as it returns, so it is as short as a point read.
    func isShortIndexWalk(_ query: RecordQuery) -> Bool {
        guard let index, let limit = query.limit, limit <= Self.inlineRowLimit, query.after == nil,
            query.order.count == 1, query.order[0].field == index
        else { return false }
        var conjuncts: [RecordPredicate] = query.predicate.map { [$0] } ?? []
        while !conjuncts.isEmpty {
            switch conjuncts.removeFirst() {
            case .and(let all): conjuncts.insert(contentsOf: all, at: 0)
            case .compare(let field, let comparison, let value) where field == index && comparison != .notEqual && value != .null:
                continue
            case .between(let field, _, _) where field == index: continue
            default: return false
            }
        }
        return true
    }

    /// A placeholder for `value`, which is bound at its position.
    private mutating func bind(_ value: QueryValue) -> String {
        values.append(value)
        return "?\(values.count)"
    }

    private mutating func render(_ predicate: RecordPredicate) -> String {
        switch predicate {
        case .compare(let field, let comparison, let value):
            let column = field.sqlExpression
            switch (comparison, value) {
            case (.equal, .null): return "\(column) IS NULL"
            case (.notEqual, .null): return "\(column) IS NOT NULL"
            // `IS NOT`: a record without the field is not equal to the value.
            case (.notEqual, _): return "\(column) IS NOT \(bind(value))"
            default: return "\(column) \(comparison.rawValue) \(bind(value))"
            }
        case .between(let field, let lower, let upper):
            return "\(field.sqlExpression) BETWEEN \(bind(lower)) AND \(bind(upper))"
        case .isIn(let field, let values):
            let present = values.filter { $0 != .null }
            var parts: [String] = []
            if !present.isEmpty {
                parts.append("\(field.sqlExpression) IN (" + present.map { bind($0) }.joined(separator: ", ") + ")")
            }
            if present.count != values.count { parts.append("\(field.sqlExpression) IS NULL") }
            if parts.isEmpty { rendersFalse = true }
            return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
        case .hasPrefix(let field, let prefix):
            let column = field.sqlExpression
            // Strings starting with `prefix` are exactly those from `prefix` up to (not
            // including) the next string of its length, in code point (= UTF-8 byte) order: a
            // range an index on the field answers.
            var range = "\(column) >= \(bind(.string(prefix)))"
            if let upper = Self.successor(of: prefix) {
                range += " AND \(column) < \(bind(.string(upper)))"
            }
            // `json_type`, not `typeof(json_extract(…))`: an array or object field reads as its
            // JSON text, and only a string may match. The range stays for an index to answer.
            return "(json_type(CAST(payload AS TEXT), '\(field.jsonPath)') = 'text' AND \(range))"
        case .isNull(let field):
            return "\(field.sqlExpression) IS NULL"
        case .contains(let field, let element):
            // json_each of a scalar gives the scalar itself: only an array's elements count.
            // An element's value compares as json_extract's does (never across kinds); an
            // object or array element's value is its JSON text, so it is ruled out.
            // The path is a validated FieldPath's (see `jsonPath`); the value is bound.
            let path = field.jsonPath
            let match = element == .null
                ? "element.type = 'null'"
                : "element.type NOT IN ('object', 'array') AND element.value = \(bind(element))"
            return "(json_type(CAST(payload AS TEXT), '\(path)') = 'array' AND EXISTS (SELECT 1 FROM json_each(CAST(payload AS TEXT), '\(path)') AS element WHERE \(match)))"
        case .and(let all):
            return all.isEmpty ? "1" : grouped(all[...], " AND ")
        case .or(let all):
            if all.isEmpty { rendersFalse = true }
            return all.isEmpty ? "0" : grouped(all[...], " OR ")
        case .not(let inner):
            // A comparison with a missing field is NULL in SQL; `IS NOT TRUE` makes its
            // negation true, so every condition is either true or false.
            return "(\(render(inner)) IS NOT TRUE)"
        }
    }

    /// The most conditions of one `and` or `or` joined in one pair of parentheses.
    static let groupSize = 16

    /// The levels of parentheses `grouped` writes for a list of `count` conditions: 1 up to
    /// `groupSize`, 2 up to its square, and so on.
    static func groupLevels(_ count: Int) -> Int {
        count <= groupSize ? 1 : 1 + groupLevels((count + groupSize - 1) / groupSize)
    }

    /// `members` joined by `separator`, in parentheses, in order. More than `groupSize` are
    /// joined in nested groups of at most that many: SQLite parses `a OR b OR c …` as a chain
    /// as deep as it is long and refuses one deeper than 1,000, while groups keep it as deep
    /// as a group times the levels of groups (4 levels for 65,536 conditions).
    private mutating func grouped(_ members: ArraySlice<RecordPredicate>, _ separator: String) -> String {
        guard members.count > Self.groupSize else {
            return "(" + members.map { render($0) }.joined(separator: separator) + ")"
        }
        let size = (members.count + Self.groupSize - 1) / Self.groupSize
        let groups = stride(from: members.startIndex, to: members.endIndex, by: size).map { start in
            grouped(members[start..<min(start + size, members.endIndex)], separator)
        }
        return "(" + groups.joined(separator: separator) + ")"
    }

    /// The rows after `token` in the order `order`, then key (in the last sort key's direction): after on the first sort key,
    /// or equal on it and after on the next, …, or equal on all and a greater key.
    private mutating func keyset(after token: QueryPageToken, order: [RecordOrder]) -> String {
        var alternatives: [String] = []
        var equalSoFar: [String] = []
        for (sort, value) in zip(order, token.values) {
            let column = sort.field.sqlExpression
            let after: String?
            switch (sort.descending, value) {
            // Ascending, missing values come first: after them, every present value.
            case (false, .null): after = "\(column) IS NOT NULL"
            case (false, _): after = "\(column) > \(bind(value))"
            // Descending, missing values come last: nothing is after them but equals.
            case (true, .null): after = nil
            case (true, _): after = "(\(column) < \(bind(value)) OR \(column) IS NULL)"
            }
            if let after { alternatives.append("(" + (equalSoFar + [after]).joined(separator: " AND ") + ")") }
            equalSoFar.append("\(column) IS \(bind(value))")
        }
        let keyAfter = "key \(order.last?.descending == true ? "<" : ">") \(bind(.string(token.key)))"
        alternatives.append("(" + (equalSoFar + [keyAfter]).joined(separator: " AND ") + ")")
        return "(" + alternatives.joined(separator: " OR ") + ")"
    }

    /// The smallest string greater than every string that starts with `prefix`: its last
    /// code point raised by one (after dropping trailing U+10FFFF); nil when there is none.
    static func successor(of prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.last, last.value == 0x10FFFF { scalars.removeLast() }
        guard let last = scalars.popLast() else { return nil }
        let raised = last.value == 0xD7FF ? 0xE000 : last.value + 1
        scalars.append(Unicode.Scalar(raised)!)
        var result = ""
        result.unicodeScalars.append(contentsOf: scalars)
        return result
    }
}
