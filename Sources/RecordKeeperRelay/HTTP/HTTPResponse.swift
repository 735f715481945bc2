public import Foundation

/// What a handler of ``HTTPServer`` answers: a status, headers and a body.
///
/// ```swift
/// return HTTPResponse(status: 200, json: try encoder.encode(page))
/// ```
///
/// ``logFields`` are not sent: they are added to the request's log line (the relay adds the
/// token's space). Never put payloads or tokens in them.
public struct HTTPResponse: Sendable {
    /// The status code, such as 200.
    public var status: Int
    /// The response headers. `Content-Length` and `Date` are set by the server.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Data
    /// `key=value` pairs for the request's log line only.
    public var logFields: [(key: String, value: String)]

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
        self.logFields = []
    }

    /// A response whose body is JSON (`Content-Type: application/json`).
    public init(status: Int, json: Data) {
        self.init(status: status, headers: HTTPHeaders([("Content-Type", "application/json")]), body: json)
    }

    /// A response whose body is one line of plain text.
    public init(status: Int, text: String) {
        self.init(
            status: status, headers: HTTPHeaders([("Content-Type", "text/plain; charset=utf-8")]),
            body: Data((text + "\n").utf8))
    }
}
