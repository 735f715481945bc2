public import Foundation

/// One HTTP request, as a handler of ``HTTPServer`` receives it: fully read, its body within
/// the server's limit.
///
/// ```swift
/// HTTPRoute(.get, "/v1/pull") { request in
///     let after = request.query["after"] ?? "0"
///     let token = request.headers["authorization"]
///     ...
/// }
/// ```
public struct HTTPRequest: Sendable {
    /// The method, such as `GET`.
    public var method: HTTPMethod
    /// The path without the query, percent-decoded (`/v1/pull`).
    public var path: String
    /// The query parameters, percent-decoded; a parameter given twice keeps its first value.
    public var query: [String: String]
    /// The request headers.
    public var headers: HTTPHeaders
    /// The body (empty when there is none).
    public var body: Data

    /// Creates a request (the server makes them; tests of handlers may too).
    public init(
        method: HTTPMethod, path: String, query: [String: String] = [:], headers: HTTPHeaders = HTTPHeaders(),
        body: Data = Data()
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }
}

/// An HTTP method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method's name as sent, such as `"GET"` (methods are case-sensitive).
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod(rawValue: "GET")
    public static let head = HTTPMethod(rawValue: "HEAD")
    public static let post = HTTPMethod(rawValue: "POST")
    public static let put = HTTPMethod(rawValue: "PUT")
    public static let delete = HTTPMethod(rawValue: "DELETE")

    public var description: String { rawValue }
}

/// HTTP header fields: looked up by name without regard to case, kept in the order received.
public struct HTTPHeaders: Sendable, Sequence {
    private var fields: [(name: String, value: String)]

    /// Creates headers from name-value pairs.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// The first value of the header `name` (any case), or `nil`.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Adds a field (a header may appear more than once).
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Sets the header `name` to one value, replacing every field of that name.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        fields.append((name, value))
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}
