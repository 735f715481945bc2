import Foundation
import RecordKeeperSync

/// One request on its way through the server, from its request line to libmicrohttpd's
/// completion callback.
///
/// Not `Sendable`, and it needs not be: libmicrohttpd calls every callback of one connection on
/// the one polling thread that owns it, and only those callbacks touch an exchange. What a
/// handler task needs crosses over as values (``HTTPRequest``) and through ``slot``.
final class HTTPExchange {
    enum Phase {
        /// The request line arrived; the headers are being read.
        case headers
        /// The headers arrived; the body (if any) is being read.
        case body
        /// A handler runs; the connection is suspended until it answers.
        case handling
        /// A response was queued.
        case responded
    }

    let started: ContinuousClock.Instant
    var phase = Phase.headers
    var method = HTTPMethod(rawValue: "")
    var path = ""
    /// The route's path once matched (the name in logs and metrics).
    var route: String?
    var query: [String: String] = [:]
    var headers = HTTPHeaders()
    var body = Data()
    /// The most body bytes the route reads: the server's limit, 0 for a route that takes none.
    var bodyLimit = 0
    /// The body grew past the limit: the rest is discarded and 413 answered.
    var overflowed = false
    var discardedBytes = 0
    /// Why a request is refused with 400 before its handler (a NUL in a header or parameter).
    var malformed: String?
    /// The status queued (or, when the connection was closed instead, the one meant).
    var status: Int?
    var logFields: [(key: String, value: String)] = []
    /// Where the handler task leaves its response.
    let slot = ResponseSlot()

    init(started: ContinuousClock.Instant) {
        self.started = started
    }
}

/// The handler task's answer, handed to the polling thread.
final class ResponseSlot: Sendable {
    private let response = Protected<HTTPResponse?>(nil)

    func store(_ value: HTTPResponse) {
        response.withLock { $0 = value }
    }

    func take() -> HTTPResponse? {
        response.withLock { value in
            defer { value = nil }
            return value
        }
    }
}

/// What the server reports of each request when it completes: the request's log line is made
/// of it, and ``HTTPServer``'s observer (the relay's metrics) receives it.
public struct HTTPRequestSummary: Sendable {
    /// The method.
    public let method: HTTPMethod
    /// The route's path, or `nil` when no route matched (never the raw path: it could hold
    /// anything a client sent).
    public let route: String?
    /// The status sent, or the one meant when the connection was closed instead.
    public let status: Int
    /// From the request line to the end of the response.
    public let duration: Duration
    /// `false` when the response was not delivered completely (the client went away, a
    /// timeout, a body far past the limit, shutdown).
    public let delivered: Bool
    /// The handler's ``HTTPResponse/logFields``.
    public let logFields: [(key: String, value: String)]

    /// The log line: `method=POST route=/v1/push status=200 duration_ms=3.1 space=alice`.
    public var logLine: String {
        var line = "method=\(method.rawValue) route=\(route ?? "unmatched") status=\(status)"
        let milliseconds = Double(duration.components.seconds) * 1000
            + Double(duration.components.attoseconds) / 1e15
        line += " duration_ms=" + String(format: "%.1f", milliseconds)
        for (key, value) in logFields { line += " \(key)=" + Self.logValue(value) }
        if !delivered { line += " delivered=false" }
        return line
    }

    /// A value as it appears in a log line: bare when it is plain, else quoted with `"`, `\` and
    /// control characters escaped, so no value can forge a field or a line.
    static func logValue(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._:/@-".unicodeScalars.contains(scalar))
        }
        if plain { return value }
        var quoted = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                quoted += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
