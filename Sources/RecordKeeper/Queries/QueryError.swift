public import Foundation

/// A query that cannot be run as asked: nothing was read. Names the field and the problem.
///
/// ```swift
/// catch let error as QueryError where error.code == .undeclaredField { print(error.field) }
/// ```
public struct QueryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public enum Code: String, Sendable {
        /// A field path with characters a JSON path of this library cannot hold.
        case invalidField
        /// A field the item type does not declare among its ``Queryable/queryFields``.
        case undeclaredField
        /// A value that does not encode as a JSON scalar (a string, number, boolean or null).
        case unencodableValue
        /// A limit that is not positive, a page token of another query, or a condition nested
        /// too deeply (``RecordStore`` allows 32 levels of `and`, `or` and `not`).
        case invalidArgument
    }

    /// What was wrong.
    public let code: Code
    /// The field as it was named (empty when the problem is not a field's).
    public let field: String
    /// The collection queried, when known.
    public internal(set) var collection: String?
    /// The reason in words.
    public let detail: String

    init(_ code: Code, fieldName: String, collection: String? = nil, detail: String) {
        self.code = code
        self.field = fieldName
        self.collection = collection
        self.detail = detail
    }

    init(_ code: Code, field: FieldPath, collection: String? = nil, detail: String) {
        self.init(code, fieldName: field.description, collection: collection, detail: detail)
    }

    public var description: String {
        var text = "Could not query"
        if let collection { text += " collection \"\(collection)\"" }
        if !field.isEmpty { text += ", field \"\(field)\"" }
        return text + ": " + detail
    }
}

extension QueryError: LocalizedError {
    /// The same sentence as ``description``, for apps that show `localizedDescription`.
    public var errorDescription: String? { description }
}
