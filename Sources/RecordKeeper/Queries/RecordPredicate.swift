/// A condition on the fields of a record's JSON payload, for ``RecordStore/query(_:_:)``.
///
/// Build one from ``RecordField`` operators, or with the cases directly:
///
/// ```swift
/// let due = RecordField("dueAt"), level = RecordField("level")
/// let predicate: RecordPredicate = due <= 1_000 && (level.in([1, 2]) || !level.exists)
/// ```
///
/// A comparison with a field that is missing (or `null`) is false, except ``isNull(_:)`` and
/// `!=`; `!` turns exactly what was false into true, so `!(a < 3)` holds for records without
/// `a`. Comparisons never convert kinds: the string `"5"` is not the number `5`.
public indirect enum RecordPredicate: Sendable, Hashable {
    /// The field compares with the value as `comparison` says.
    case compare(FieldPath, Comparison, QueryValue)
    /// `lower <= field <= upper`.
    case between(FieldPath, QueryValue, QueryValue)
    /// The field equals one of the values (an empty set matches nothing).
    case isIn(FieldPath, [QueryValue])
    /// The field is a string that starts with the given string (by UTF-8 bytes).
    case hasPrefix(FieldPath, String)
    /// The field is an array with an element equal to the value (compared as `==` compares;
    /// ``QueryValue/null`` matches a `null` element). A field that is not an array, or is
    /// missing, contains nothing.
    case contains(FieldPath, QueryValue)
    /// The field is missing or `null`.
    case isNull(FieldPath)
    /// Every condition holds (an empty list always holds).
    case and([RecordPredicate])
    /// At least one holds (an empty list never holds).
    case or([RecordPredicate])
    /// The condition does not hold.
    case not(RecordPredicate)

    /// How ``compare(_:_:_:)`` compares.
    public enum Comparison: String, Sendable, Hashable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    /// The conditions that must all hold: those of an `and`, else the predicate itself.
    private var conjuncts: [RecordPredicate] {
        if case .and(let all) = self { all } else { [self] }
    }

    /// The conditions of which one must hold: those of an `or`, else the predicate itself.
    private var disjuncts: [RecordPredicate] {
        if case .or(let all) = self { all } else { [self] }
    }

    /// The deepest nesting of `and`, `or` and `not` in the predicate (0 for a single
    /// condition), as the parentheses of its SQL nest: a list of more than 16 conditions
    /// counts as the levels of groups it is written in (2 up to 256, 3 up to 4,096). Counted
    /// without recursion, and no further than just past `limit`.
    func nesting(upTo limit: Int) -> Int {
        var deepest = 0
        var pending: [(RecordPredicate, Int)] = [(self, 0)]
        while let (predicate, depth) = pending.popLast(), deepest <= limit {
            switch predicate {
            case .and(let all), .or(let all):
                let inner = depth + QuerySQL.groupLevels(all.count)
                deepest = max(deepest, inner)
                pending.append(contentsOf: all.map { ($0, inner) })
            case .not(let inner):
                deepest = max(deepest, depth + 1)
                pending.append((inner, depth + 1))
            case .compare, .between, .isIn, .hasPrefix, .contains, .isNull:
                continue
            }
        }
        return deepest
    }

    /// The first ordering comparison (`<`, `<=`, `>`, `>=`, `between`) with nil as a bound, which
    /// could match nothing: its field and what it asked, in words.
    var orderedAgainstNull: (FieldPath, String)? {
        var pending: [RecordPredicate] = [self]
        while let predicate = pending.popLast() {
            switch predicate {
            case .compare(let field, let comparison, .null) where comparison != .equal && comparison != .notEqual:
                return (field, "comparing with \(comparison.rawValue)")
            case .between(let field, .null, _), .between(let field, _, .null):
                return (field, "between with a bound of")
            case .and(let all), .or(let all):
                pending.append(contentsOf: all)
            case .not(let inner):
                pending.append(inner)
            case .compare, .between, .isIn, .hasPrefix, .contains, .isNull:
                continue
            }
        }
        return nil
    }

    /// Every field the predicate reads.
    var fields: [FieldPath] {
        switch self {
        case .compare(let field, _, _), .between(let field, _, _), .isIn(let field, _), .hasPrefix(let field, _),
            .isNull(let field), .contains(let field, _):
            [field]
        case .and(let all), .or(let all): all.flatMap(\.fields)
        case .not(let inner): inner.fields
        }
    }

    /// True when some value of the predicate is a ``QueryValue/date(_:)`` (to be written by the
    /// collection's date strategy before it is bound).
    var holdsDate: Bool {
        func isDate(_ value: QueryValue) -> Bool {
            if case .date = value { return true }
            return false
        }
        switch self {
        case .compare(_, _, let value), .contains(_, let value): return isDate(value)
        case .between(_, let lower, let upper): return isDate(lower) || isDate(upper)
        case .isIn(_, let values): return values.contains(where: isDate)
        case .hasPrefix, .isNull: return false
        case .and(let all), .or(let all): return all.contains(where: \.holdsDate)
        case .not(let inner): return inner.holdsDate
        }
    }

    /// The predicate with every field and value transformed (a key strategy, dates encoded).
    func mapped(
        field: (FieldPath) throws -> FieldPath, value: (QueryValue, FieldPath) throws -> QueryValue
    ) throws -> RecordPredicate {
        switch self {
        case .compare(let path, let comparison, let operand):
            return .compare(try field(path), comparison, try value(operand, path))
        case .between(let path, let lower, let upper):
            return .between(try field(path), try value(lower, path), try value(upper, path))
        case .isIn(let path, let values):
            return .isIn(try field(path), try values.map { try value($0, path) })
        case .hasPrefix(let path, let prefix): return .hasPrefix(try field(path), prefix)
        case .contains(let path, let element): return .contains(try field(path), try value(element, path))
        case .isNull(let path): return .isNull(try field(path))
        case .and(let all): return .and(try all.map { try $0.mapped(field: field, value: value) })
        case .or(let all): return .or(try all.map { try $0.mapped(field: field, value: value) })
        case .not(let inner): return .not(try inner.mapped(field: field, value: value))
        }
    }

    /// Both hold. Chains stay one level deep: `a && b && c` is `.and([a, b, c])`.
    public static func && (lhs: RecordPredicate, rhs: RecordPredicate) -> RecordPredicate {
        .and(lhs.conjuncts + rhs.conjuncts)
    }
    /// At least one holds. Chains stay one level deep: `a || b || c` is `.or([a, b, c])`, so a
    /// condition built in a loop nests no deeper than a list.
    public static func || (lhs: RecordPredicate, rhs: RecordPredicate) -> RecordPredicate {
        .or(lhs.disjuncts + rhs.disjuncts)
    }
    /// Does not hold.
    public static prefix func ! (predicate: RecordPredicate) -> RecordPredicate { .not(predicate) }
}

/// A field of stored JSON payloads, named as the JSON names it, for building untyped
/// predicates and orderings: `RecordField("dueAt") < 5`, `RecordField("address.city").descending`.
///
/// The name is checked when the field is made (see ``FieldPath``): an invalid one traps, as
/// a malformed literal would; use ``init(path:)`` with `try FieldPath(name)` for names read at
/// run time.
public struct RecordField: Sendable, Hashable {
    /// The field's path.
    public let path: FieldPath

    /// The field `name` (its segments separated by `.`).
    /// - Precondition: `name` is a valid ``FieldPath``.
    public init(_ name: StaticString) {
        do { path = try FieldPath(name.description) } catch { preconditionFailure(error.description) }
    }

    /// The field at `path`.
    public init(path: FieldPath) { self.path = path }

    public static func == (field: RecordField, value: QueryValue) -> RecordPredicate {
        value == .null ? .isNull(field.path) : .compare(field.path, .equal, value)
    }
    public static func != (field: RecordField, value: QueryValue) -> RecordPredicate {
        value == .null ? .not(.isNull(field.path)) : .compare(field.path, .notEqual, value)
    }
    public static func < (field: RecordField, value: QueryValue) -> RecordPredicate { .compare(field.path, .less, value) }
    public static func <= (field: RecordField, value: QueryValue) -> RecordPredicate {
        .compare(field.path, .lessOrEqual, value)
    }
    public static func > (field: RecordField, value: QueryValue) -> RecordPredicate { .compare(field.path, .greater, value) }
    public static func >= (field: RecordField, value: QueryValue) -> RecordPredicate {
        .compare(field.path, .greaterOrEqual, value)
    }

    /// `lower <= field <= upper`.
    public func between(_ lower: QueryValue, _ upper: QueryValue) -> RecordPredicate { .between(path, lower, upper) }
    /// The field equals one of `values`.
    public func `in`(_ values: [QueryValue]) -> RecordPredicate { .isIn(path, values) }
    /// The field is a string starting with `prefix`.
    public func hasPrefix(_ prefix: String) -> RecordPredicate { .hasPrefix(path, prefix) }
    /// The field is an array with an element equal to `element` (`RecordField("tags").contains("swift")`).
    public func contains(_ element: QueryValue) -> RecordPredicate { .contains(path, element) }
    /// The field is missing or `null`.
    public var isNull: RecordPredicate { .isNull(path) }
    /// The field is present and not `null`.
    public var exists: RecordPredicate { .not(.isNull(path)) }

    /// Ascending order by this field.
    public var ascending: RecordOrder { RecordOrder(path, descending: false) }
    /// Descending order by this field.
    public var descending: RecordOrder { RecordOrder(path, descending: true) }
}
