import Foundation

/// An item type whose repository answers queries: it declares, once, the fields queries may
/// name (see ``Field``).
///
/// ```swift
/// struct Word: Codable, Identifiable, Equatable, Sendable, Queryable {
///     var id: String
///     var text: String
///     var dueAt: Date
///     var level: Int
///
///     static let text = Field<Word, String>("text")
///     static let dueAt = Field<Word, Date>("dueAt")
///     static let level = Field<Word, Int>("level")
///     static let queryFields: [any QueryField] = [text, dueAt, level]
/// }
/// let due = try await words.query(where: Word.dueAt <= .now, orderBy: [Word.dueAt.ascending], limit: 20)
/// ```
public protocol Queryable {
    /// Every field queries of this type may name. A query naming another is refused with
    /// ``QueryError`` (`undeclaredField`), never answered with an empty result.
    static var queryFields: [any QueryField] { get }
}

/// A declared field of a ``Queryable`` type, as ``Queryable/queryFields`` lists them.
public protocol QueryField: Sendable {
    /// The field's path as the item's `Codable` code names it (before any key strategy).
    var path: FieldPath { get }
}

/// A field of `Item` holding `Value`, named as its `Codable` code names it (`"dueAt"`, or
/// `"address.city"` for a nested one); the repository's key strategy (`snakeCase`) applies.
///
/// Values are compared as the repository's coder writes them: a `Date` by the collection's
/// date strategy (numbers for the default and the `since1970` strategies, ISO 8601 text,
/// which orders as the dates do, for `.iso8601`), an enum by its raw value.
public struct Field<Item, Value: Encodable & Sendable>: QueryField {
    public let path: FieldPath

    /// The field `name`.
    /// - Precondition: `name` is a valid ``FieldPath`` (letters, digits, `_`, dots between).
    public init(_ name: StaticString) {
        do { path = try FieldPath(name.description) } catch { preconditionFailure(error.description) }
    }

    /// The field at `path`.
    public init(path: FieldPath) { self.path = path }

    public static func == (field: Self, value: Value) -> ItemPredicate<Item> { field.compare(.equal, value) }
    public static func != (field: Self, value: Value) -> ItemPredicate<Item> { field.compare(.notEqual, value) }

    /// The field equals one of `values`.
    public func `in`(_ values: [Value]) -> ItemPredicate<Item> {
        let path = path
        return ItemPredicate { context in
            .isIn(try context.path(path), try values.map { try context.value($0, path) })
        }
    }

    /// The field is missing or `null` (an optional that was `nil`).
    public var isNull: ItemPredicate<Item> {
        let path = path
        return ItemPredicate { context in .isNull(try context.path(path)) }
    }

    /// Ascending order by this field.
    public var ascending: ItemOrder<Item> { ItemOrder(path: path, descending: false) }
    /// Descending order by this field.
    public var descending: ItemOrder<Item> { ItemOrder(path: path, descending: true) }

    func compare(_ comparison: RecordPredicate.Comparison, _ value: Value) -> ItemPredicate<Item> {
        let path = path
        return ItemPredicate { context in
            let operand = try context.value(value, path)
            let field = try context.path(path)
            if operand == .null { return comparison == .notEqual ? .not(.isNull(field)) : .isNull(field) }
            return .compare(field, comparison, operand)
        }
    }
}

extension Field where Value: Comparable {
    public static func < (field: Self, value: Value) -> ItemPredicate<Item> { field.compare(.less, value) }
    public static func <= (field: Self, value: Value) -> ItemPredicate<Item> { field.compare(.lessOrEqual, value) }
    public static func > (field: Self, value: Value) -> ItemPredicate<Item> { field.compare(.greater, value) }
    public static func >= (field: Self, value: Value) -> ItemPredicate<Item> { field.compare(.greaterOrEqual, value) }

    /// `lower <= field <= upper`.
    public func between(_ lower: Value, _ upper: Value) -> ItemPredicate<Item> {
        let path = path
        return ItemPredicate { context in
            .between(try context.path(path), try context.value(lower, path), try context.value(upper, path))
        }
    }
}

// An optional field (`Field<Word, Int?>`) compares with a value of the type it wraps: a record
// whose field is missing or `null` matches no comparison (see docs/QUERIES.md).
extension Field {
    /// The optional field is present and less than `value`.
    public static func < <Wrapped: Comparable>(field: Self, value: Wrapped) -> ItemPredicate<Item> where Value == Wrapped? {
        field.compare(.less, value)
    }
    /// The optional field is present and at most `value`.
    public static func <= <Wrapped: Comparable>(field: Self, value: Wrapped) -> ItemPredicate<Item> where Value == Wrapped? {
        field.compare(.lessOrEqual, value)
    }
    /// The optional field is present and greater than `value`.
    public static func > <Wrapped: Comparable>(field: Self, value: Wrapped) -> ItemPredicate<Item> where Value == Wrapped? {
        field.compare(.greater, value)
    }
    /// The optional field is present and at least `value`.
    public static func >= <Wrapped: Comparable>(field: Self, value: Wrapped) -> ItemPredicate<Item> where Value == Wrapped? {
        field.compare(.greaterOrEqual, value)
    }

    /// `lower <= field <= upper`, for an optional field: false when the field is missing or `null`.
    public func between<Wrapped: Comparable>(_ lower: Wrapped, _ upper: Wrapped) -> ItemPredicate<Item>
    where Value == Wrapped? {
        let path = path
        return ItemPredicate { context in
            .between(try context.path(path), try context.value(lower, path), try context.value(upper, path))
        }
    }

    /// The optional field is a string starting with `prefix` (by code points); false when it is
    /// missing or `null`.
    public func hasPrefix<Wrapped: StringProtocol>(_ prefix: String) -> ItemPredicate<Item> where Value == Wrapped? {
        let path = path
        return ItemPredicate { context in .hasPrefix(try context.path(path), prefix) }
    }
}

/// A collection a queried field may hold that its `Codable` code writes as a JSON array of its
/// elements: `Array` and `Set`. Its fields take `contains(_:)` (`Note.tags.contains("swift")`).
public protocol QueryableArray: Sequence where Element: Encodable {}

extension Array: QueryableArray where Element: Encodable {}
extension Set: QueryableArray where Element: Encodable {}

extension Field where Value: QueryableArray, Value.Element: Sendable {
    /// The field is an array with an element equal to `element` (`Note.tags.contains("swift")`),
    /// for fields of arrays and sets. A record whose field is missing or `null` contains nothing.
    public func contains(_ element: Value.Element) -> ItemPredicate<Item> {
        let path = path
        return ItemPredicate { context in .contains(try context.path(path), try context.value(element, path)) }
    }
}

extension Field {
    /// The optional array (or set) field has an element equal to `element`; a record whose
    /// field is missing or `null` contains nothing.
    public func contains<Wrapped: QueryableArray>(_ element: Wrapped.Element) -> ItemPredicate<Item>
    where Value == Wrapped?, Wrapped.Element: Sendable {
        let path = path
        return ItemPredicate { context in .contains(try context.path(path), try context.value(element, path)) }
    }
}

extension Field where Value: StringProtocol {
    /// The field is a string starting with `prefix` (by code points).
    public func hasPrefix(_ prefix: String) -> ItemPredicate<Item> {
        let path = path
        return ItemPredicate { context in .hasPrefix(try context.path(path), prefix) }
    }
}

/// A condition on `Item`'s declared fields, made with ``Field``'s operators and combined with
/// `&&`, `||` and `!`. Turned into a ``RecordPredicate`` by the repository, which checks each
/// field is declared and writes each value with its coder.
public struct ItemPredicate<Item>: Sendable {
    /// A condition made by a field's operator, or a combination of others. Chains of `&&` or
    /// of `||` are kept as one list, so a condition built in a loop nests no deeper than one.
    private indirect enum Node: Sendable {
        case condition(@Sendable (ItemQueryContext) throws -> RecordPredicate)
        case and([ItemPredicate])
        case or([ItemPredicate])
        case not(ItemPredicate)
    }

    private let node: Node

    init(_ build: @escaping @Sendable (ItemQueryContext) throws -> RecordPredicate) { node = .condition(build) }

    private init(node: Node) { self.node = node }

    /// The stored-JSON predicate, with the context's paths and coder.
    func build(_ context: ItemQueryContext) throws -> RecordPredicate {
        switch node {
        case .condition(let build): try build(context)
        case .and(let all): .and(try all.map { try $0.build(context) })
        case .or(let all): .or(try all.map { try $0.build(context) })
        case .not(let inner): .not(try inner.build(context))
        }
    }

    /// Both hold.
    public static func && (lhs: Self, rhs: Self) -> Self { Self(node: .and(lhs.conjuncts + rhs.conjuncts)) }
    /// At least one holds.
    public static func || (lhs: Self, rhs: Self) -> Self { Self(node: .or(lhs.disjuncts + rhs.disjuncts)) }
    /// Does not hold.
    public static prefix func ! (predicate: Self) -> Self { Self(node: .not(predicate)) }

    private var conjuncts: [Self] {
        if case .and(let all) = node { all } else { [self] }
    }

    private var disjuncts: [Self] {
        if case .or(let all) = node { all } else { [self] }
    }
}

/// A sort key over a declared field of `Item`: `Word.dueAt.descending`.
public struct ItemOrder<Item>: Sendable {
    let path: FieldPath
    let descending: Bool
}

/// What turns typed predicates into stored-JSON ones: the declared fields, the key strategy
/// and the repository's coder. Used only on the repository's actor, while building a query.
struct ItemQueryContext {
    /// The stored path (key strategy applied) of each declared field.
    let paths: [FieldPath: FieldPath]
    let coder: PayloadCoder

    /// The stored path of declared field `path`.
    func path(_ path: FieldPath) throws -> FieldPath {
        guard let stored = paths[path] else {
            throw QueryError(.undeclaredField, field: path, detail: "the item type does not declare this field in queryFields")
        }
        return stored
    }

    /// A date stays a ``QueryValue/date(_:)`` until the whole predicate is built, so that
    /// `storedQuery` can move bounds with a fraction of a second to whole seconds
    /// (`RecordPredicate.overWholeSeconds()`) before the coder writes them.
    func value(_ value: some Encodable, _ path: FieldPath) throws -> QueryValue {
        if let date = value as? Date { return .date(date) }
        return try QueryValue.encoded(value, with: coder, field: path)
    }
}
