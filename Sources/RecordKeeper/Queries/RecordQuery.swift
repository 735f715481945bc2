import Foundation

/// One sort key of a query: a field, ascending or descending.
///
/// Missing and `null` fields sort first ascending and last descending; records that tie on
/// every sort key are in key order (by UTF-8 bytes), in the direction of the last sort key
/// (ascending without one), so every result has one order, and a declared index, read
/// forwards or backwards, gives it without sorting.
public struct RecordOrder: Sendable, Hashable {
    /// The field sorted by.
    public let field: FieldPath
    /// True for largest first.
    public let descending: Bool

    /// A sort key.
    public init(_ field: FieldPath, descending: Bool = false) {
        self.field = field
        self.descending = descending
    }
}

/// What to read of a collection: which records, in which order, how many, from where.
///
/// ```swift
/// let query = RecordQuery(
///     where: RecordField("done") == false, orderBy: [RecordField("dueAt").ascending], limit: 20)
/// let page = try await store.query("tasks", query)
/// ```
public struct RecordQuery: Sendable, Hashable {
    /// The condition records must meet (nil: every record).
    public var predicate: RecordPredicate?
    /// The sort keys, before the record key that breaks ties.
    public var order: [RecordOrder]
    /// At most this many records per page (nil: all).
    public var limit: Int?
    /// Where the page starts: after the last record of the page that gave this token.
    public var after: QueryPageToken?

    /// A query.
    public init(
        where predicate: RecordPredicate? = nil, orderBy order: [RecordOrder] = [], limit: Int? = nil,
        after: QueryPageToken? = nil
    ) {
        self.predicate = predicate
        self.order = order
        self.limit = limit
        self.after = after
    }

    /// True when ties are broken by descending key: the last sort key is descending.
    var keyDescending: Bool { order.last?.descending == true }

    /// Every field the query reads.
    var fields: [FieldPath] { (predicate?.fields ?? []) + order.map(\.field) }

    /// The query's sort keys as a page token names them, so a token is refused by another order.
    var orderSignature: String {
        order.map { ($0.descending ? "-" : "+") + $0.field.description }.joined(separator: ",")
    }

    /// The query with every field and value transformed (see `RecordPredicate.mapped`).
    func mapped(
        field: (FieldPath) throws -> FieldPath, value: (QueryValue, FieldPath) throws -> QueryValue
    ) throws -> RecordQuery {
        var query = self
        query.predicate = try predicate?.mapped(field: field, value: value)
        query.order = try order.map { RecordOrder(try field($0.field), descending: $0.descending) }
        return query
    }
}

/// Where the next page of a query starts: the sort values and key of the last record given.
///
/// A keyset, not an offset: the next page starts right after that record in the query's
/// order, wherever writes since then moved other records, so no record that stayed in place
/// is given twice or skipped. Opaque; ``text`` and ``init(text:)`` carry it (in a URL, a
/// state restoration) as a string.
public struct QueryPageToken: Sendable, Hashable, Codable {
    let order: String
    let values: [QueryValue]
    let key: String

    init(order: String, values: [QueryValue], key: String) {
        self.order = order
        self.values = values
        self.key = key
    }

    /// How a token writes non-finite sort values (JSON has no number for them).
    private static let infinity = "Infinity"
    private static let notANumber = "NaN"

    /// The token as text (base64 of its JSON).
    public var text: String {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: Self.infinity, negativeInfinity: "-" + Self.infinity, nan: Self.notANumber)
        // Encoding a struct of strings and scalar enums cannot fail once non-finite doubles
        // (a sort value SQLite read as ±Inf from `1e999`) have a form.
        return (try! encoder.encode(self)).base64EncodedString()
    }

    /// The token `text` stands for; nil when it is not one.
    public init?(text: String) {
        guard let data = Data(base64Encoded: text) else { return nil }
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: Self.infinity, negativeInfinity: "-" + Self.infinity, nan: Self.notANumber)
        do {
            self = try decoder.decode(QueryPageToken.self, from: data)
        } catch {
            return nil  // not a token this library wrote
        }
    }
}

/// One page of a query's records, in its order.
public struct QueryPage<Element: Sendable>: Sendable {
    /// The page's elements.
    public var elements: [Element]
    /// Where the next page starts; nil when this page is the last (fewer than the limit, or no limit).
    public var next: QueryPageToken?

    /// A page.
    public init(elements: [Element], next: QueryPageToken?) {
        self.elements = elements
        self.next = next
    }
}

extension QueryPage: Equatable where Element: Equatable {}
