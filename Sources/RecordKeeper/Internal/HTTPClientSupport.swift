import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sending a request and the words for its failures, shared by ``HTTPOutboxTransport`` and
/// ``HTTPSyncServer``.
package enum HTTPClientSupport {
    /// `text` with the password of a URL's user information (`scheme://user:password@host`)
    /// shown as `***`, for messages and logs: the rest as given. Text without one is returned
    /// as it is.
    package static func withoutPassword(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        let authorityEnd = text[schemeEnd.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
        let authority = text[schemeEnd.upperBound..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return text }
        return String(text[..<authority.index(after: colon)]) + "***" + String(text[at...])
    }

    /// Sends `request` through `session`. A cancelled task is `CancellationError` (URLSession
    /// reports it as `URLError.cancelled` on Apple platforms; on Linux the request is abandoned,
    /// not cancelled: ``AbandonableRequest``); any other
    /// `URLError` becomes `failure(words)`, the words saying what happened (``describe(_:timeout:afterTimeout:)``).
    static func send(
        _ request: URLRequest, through session: URLSession, afterTimeout: String,
        failure: (_ words: String, _ error: URLError) -> any Error
    ) async throws -> (Data, URLResponse) {
        let answer: (Data, URLResponse)
        do {
            #if canImport(FoundationNetworking)
                answer = try await AbandonableRequest.data(for: request, through: RedirectRefusal.refusing(session))
            #else
                answer = try await session.data(for: request, delegate: RedirectRefusal.shared)
            #endif
        } catch let error as URLError where error.code == .cancelled && Task.isCancelled {
            throw CancellationError()
        } catch let error as URLError {
            throw failure(
                describe(error, timeout: session.configuration.timeoutIntervalForRequest, afterTimeout: afterTimeout),
                error)
        }
        // A redirect the app's own session delegate chose to follow: the answer is another
        // URL's, not the server's (a 200 from a login page is no delivery).
        if let asked = request.url, let answered = answer.1.url, !sameResource(asked, answered) {
            throw failure(
                "the session followed a redirect to \(answered.shownWithoutPassword) (its delegate allowed it); an answer "
                    + "from another URL is not the server's (URLError \(URLError.Code.httpTooManyRedirects.rawValue))",
                URLError(.httpTooManyRedirects))
        }
        return answer
    }

    /// Whether two URLs name the same resource, as a request's and its answer's: scheme, host,
    /// port and path (an empty path is `/`); the query is not compared (Foundation may
    /// re-encode it).
    static func sameResource(_ a: URL, _ b: URL) -> Bool {
        func parts(_ url: URL) -> [String?] {
            let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
            let path = components?.percentEncodedPath ?? ""
            return [components?.scheme?.lowercased(), components?.host?.lowercased(),
                    components?.port.map(String.init), path.isEmpty ? "/" : path]
        }
        return parts(a) == parts(b)
    }

    /// The words for an answer that redirects (3xx): the redirect is not followed
    /// (``RedirectRefusal``), so the request and its headers went nowhere else.
    static func redirectWords(_ response: HTTPURLResponse) -> String {
        let location = response.value(forHTTPHeaderField: "Location").map { " to \(withoutPassword($0))" } ?? ""
        return "HTTP \(response.statusCode) redirects\(location); redirects are not followed (a captive portal's login "
            + "page or a moved endpoint would take the request and its headers elsewhere): the request "
            + "went nowhere else, and the URL must be the one that answers"
    }

    /// What a failed request means, in words (Foundation's own text on Linux is only
    /// "The operation could not be completed. (NSURLErrorDomain error -1001.)"), with the
    /// `URLError` code for searching. `timeout` is the one that applied: the session's;
    /// `afterTimeout` says what a timeout (or a connection lost before the answer) means for
    /// the request.
    static func describe(_ error: URLError, timeout: TimeInterval, afterTimeout: String) -> String {
        let what: String
        switch error.code {
        case .timedOut:
            let seconds = timeout.rounded() == timeout ? String(Int(timeout)) : String(timeout)
            what = "timed out: no answer within \(seconds) s (the session's timeoutIntervalForRequest); " + afterTimeout
        case .cannotConnectToHost:
            what = "could not connect: nothing accepted the connection at this address"
        case .cannotFindHost, .dnsLookupFailed:
            what = "could not connect: the host name could not be resolved"
        case .networkConnectionLost:
            // The same uncertainty as a timeout: what it means depends on the request.
            what = "the connection was lost before an answer arrived; " + afterTimeout
        case .notConnectedToInternet:
            what = "could not connect: there is no network connection"
        case _ where isTLSFailure(error):
            what = tlsWords(error)
        case .cancelled:
            what = "the request was cancelled"
        case .badServerResponse:
            what = "the server's answer was not valid HTTP"
                + (error.failingURL?.scheme?.lowercased() == "http" ? " (a server that serves TLS needs an https:// URL)" : "")
        case .badURL, .unsupportedURL:
            what = "the URL cannot be used (a scheme other than http or https, a port outside 1–65535, a malformed host)"
        default:
            what = error.localizedDescription
        }
        return "\(what) (URLError \(error.code.rawValue))"
    }

    /// Whether `error` is a TLS connection that failed, for the words of ``describe``: a
    /// certificate this device does not trust, a handshake that failed (a server that speaks no
    /// TLS at an `https://` URL, or a connection cut during the handshake). Apple platforms give
    /// these their own codes; FoundationNetworking on Linux (libcurl) gives `URLError.unknown`
    /// with libcurl's and OpenSSL's words, which name SSL.
    static func isTLSFailure(_ error: URLError) -> Bool {
        switch error.code {
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected,
             .clientCertificateRequired:
            return true
        case .unknown:
            let text = error.localizedDescription
            return text.contains("SSL") || text.contains("TLS")
        default:
            return false
        }
    }

    /// Whether `error` is a TLS failure that settings cause and waiting does not mend: a server
    /// certificate this device does not trust (a private CA, self-signed, expired, for another
    /// name), or an `https://` URL of a server that speaks no TLS. Not a handshake cut short
    /// (a relay or load balancer restarting: `SSL_ERROR_SYSCALL`, a reset), which a later
    /// attempt may pass, nor a client certificate (not this library's settings).
    package static func isTLSSettingsFailure(_ error: (any Error)?) -> Bool {
        guard let error = error as? URLError else { return false }
        switch error.code {
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot:
            return true
        case .unknown:
            let text = error.localizedDescription
            return settingsWords.contains { text.contains($0) }
        default:
            return false
        }
    }

    /// libcurl's and OpenSSL's words for a certificate not trusted and for no TLS at all.
    private static let settingsWords = [
        "SSL certificate problem", "certificate verify failed", "unable to get local issuer", "self-signed",
        "self signed", "certificate has expired", "no alternative certificate subject name", "does not match target host",
        "wrong version number", "packet length too long",
    ]

    /// The words of a failed TLS connection, with its cause as the platform gives it.
    private static func tlsWords(_ error: URLError) -> String {
        let cause = error.localizedDescription
        if cause.contains("wrong version number") || cause.contains("packet length too long") {
            return "the TLS connection failed: the server speaks no TLS at this address (\(cause)); a server "
                + "without TLS is reached with an http:// URL"
        }
        if error.code == .clientCertificateRejected || error.code == .clientCertificateRequired {
            return "the TLS connection failed: the server asked for a client certificate or refused this device's (\(cause))"
        }
        if isTLSSettingsFailure(error) {
            return "the TLS connection failed: \(cause); the server's certificate must be one this device trusts "
                + "(a certificate of a private CA needs that CA in the system's trust store)"
        }
        return "the TLS connection failed during its handshake: \(cause)"
    }

    /// The first 200 bytes of a response body, for error messages: on one line, each run of
    /// whitespace and control characters (a page's line breaks) made one space.
    static func bodyExcerpt(_ data: Data) -> String {
        guard !data.isEmpty else { return "" }
        let text = String(decoding: data.prefix(200), as: UTF8.self)
        let line = text.unicodeScalars
            .split(whereSeparator: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
            .map { String(String.UnicodeScalarView($0)) }
            .joined(separator: " ")
        return ": " + line + (data.count > 200 ? "…" : "")
    }

    /// The longest wait a `Retry-After` is taken for: a server asking for more gets this.
    static let longestRetryAfter = 86_400

    /// A `Retry-After` value: delay seconds, or an HTTP date (RFC 9110 IMF-fixdate), at most
    /// ``longestRetryAfter`` seconds (a server's value far in the future must not block a
    /// queue for good, nor overflow the clock's arithmetic).
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(min(seconds, longestRetryAfter)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        let seconds = min(max(0, date.timeIntervalSince(now)), Double(longestRetryAfter))
        return .milliseconds(Int64(seconds * 1000))
    }
}

extension URL {
    /// The URL as text for messages, its password (if any) shown as `***`.
    package var shownWithoutPassword: String { HTTPClientSupport.withoutPassword(absoluteString) }
}
