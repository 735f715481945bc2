/// A handler of ``HTTPServer``: an `async` function from a request to its response.
///
/// The server calls it in a task of its own once the request is fully read, with the
/// connection suspended meanwhile: a handler may wait (for a database, for a change to pull)
/// without holding any thread. A handler must return promptly once its task is cancelled (the
/// server cancels handlers still running when a graceful shutdown's grace period ends).
public typealias HTTPHandler = @Sendable (HTTPRequest) async -> HTTPResponse

/// One method and exact path an ``HTTPServer`` answers, with its handler.
///
/// ```swift
/// let health = HTTPRoute(.get, "/v1/health") { _ in HTTPResponse(status: 200, text: "ok") }
/// ```
public struct HTTPRoute: Sendable {
    /// The method answered.
    public let method: HTTPMethod
    /// The exact path answered (no patterns); also the route's name in logs and metrics.
    public let path: String
    /// Whether the route reads a request body. A route that takes none answers a request
    /// with one 413 before reading it, so its body is never buffered.
    public let takesBody: Bool
    /// Looks at the request once its headers arrived, before its body is read: a response
    /// refuses it unread (the relay answers a push without a valid token with 401 before
    /// buffering its megabytes); nil admits it. Runs on the server's polling thread: keep it
    /// short and never wait.
    public let screen: (@Sendable (HTTPHeaders) -> HTTPResponse?)?
    /// The handler.
    public let handler: HTTPHandler

    /// Creates a route.
    public init(
        _ method: HTTPMethod, _ path: String, takesBody: Bool = true,
        screen: (@Sendable (HTTPHeaders) -> HTTPResponse?)? = nil, handler: @escaping HTTPHandler
    ) {
        self.method = method
        self.path = path
        self.takesBody = takesBody
        self.screen = screen
        self.handler = handler
    }
}

/// Finds the route of a request.
struct HTTPRouter: Sendable {
    enum Match {
        case found(HTTPRoute)
        /// The path exists with other methods (405, with `Allow`).
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
    }

    private let routes: [String: [HTTPRoute]]

    init(_ routes: [HTTPRoute]) {
        self.routes = Dictionary(grouping: routes, by: \.path)
    }

    func match(method: HTTPMethod, path: String) -> Match {
        guard let candidates = routes[path] else { return .notFound }
        if let route = candidates.first(where: { $0.method == method }) { return .found(route) }
        // HEAD is answered by a GET route (the server sends no body).
        if method == .head, let route = candidates.first(where: { $0.method == .get }) { return .found(route) }
        return .methodNotAllowed(allowed: candidates.map(\.method))
    }
}
