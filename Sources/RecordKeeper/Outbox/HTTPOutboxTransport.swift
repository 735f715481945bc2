public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Delivers outbox operations as HTTP POST requests with Foundation's `URLSession`.
///
/// Each request carries the operation's payload as its body and the headers
/// `Idempotency-Key: <id>` (the UUID string), `RecordKeeper-Operation-Kind: <kind>`,
/// `Content-Type: application/json`, plus whatever ``init(endpoint:session:headers:)``'s
/// `headers` returns at that moment (for tokens that refresh).
///
/// | response | outcome |
/// | --- | --- |
/// | 2xx | delivered |
/// | connection failure, timeout, 408, 429, 5xx | retried, not before `Retry-After` (seconds or an HTTP date) |
/// | 401 | retried (the token may have been refreshed by then) |
/// | any other status | permanent: dead letter, with the status and the start of the body |
///
/// The receiver must dedupe by `Idempotency-Key`: an operation whose outcome was unknown (a
/// timeout, a lost connection, a process that died) is sent again with the same key.
///
/// Cancelling the delivering task cancels the request and throws `CancellationError`, so an
/// ``OutboxProcessor`` that is cancelled records the attempt and leaves the operation due
/// again at once.
///
/// **Timeouts.** The session's own timeout is the one that applies: its configuration's
/// `timeoutIntervalForRequest` (60 s for `URLSession.shared` and for a new configuration).
/// On Linux (FoundationNetworking) the request's `timeoutInterval` is ignored: measured, a
/// request asking for 2 s in a session of 6 s times out after 6 s, and one asking for 6 s in a
/// session of 2 s after 2 s. To choose the timeout, pass a session configured with it, well
/// under ``OutboxProcessor/leaseDuration`` (2 minutes). A timeout is a retryable failure whose
/// message says so ("timed out: no answer within 60 s …", with `URLError -1001`).
///
/// On Linux, `URLSession` lives in FoundationNetworking: code that makes its own session
/// needs `import FoundationNetworking` beside `import Foundation` (`#if canImport(FoundationNetworking)`).
///
/// ```swift
/// #if canImport(FoundationNetworking)
/// import FoundationNetworking
/// #endif
/// let configuration = URLSessionConfiguration.ephemeral
/// configuration.timeoutIntervalForRequest = 20
/// let transport = HTTPOutboxTransport(endpoint: endpoint, session: URLSession(configuration: configuration))
/// ```
public struct HTTPOutboxTransport: OutboxTransport {
    /// Where operations are posted.
    public let endpoint: URL
    let session: URLSession
    let headers: @Sendable () async throws -> [String: String]
    /// The timeout each request asks for (`URLRequest.timeoutInterval`), well under
    /// ``OutboxProcessor/leaseDuration``. The session's own timeout wins where they differ (on
    /// Linux always): see "Timeouts" above.
    public static let requestTimeout: TimeInterval = 60
    /// The timeout requests ask for (tests shorten it; the session's applies).
    let timeout: TimeInterval

    /// Creates a transport posting to `endpoint`.
    ///
    /// ```swift
    /// let transport = HTTPOutboxTransport(endpoint: URL(string: "https://api.example.com/ops")!) {
    ///     ["Authorization": "Bearer \(try await tokens.current())"]
    /// }
    /// ```
    public init(
        endpoint: URL, session: URLSession = .shared,
        headers: @escaping @Sendable () async throws -> [String: String] = { [:] }
    ) {
        self.init(endpoint: endpoint, session: session, timeout: Self.requestTimeout, headers: headers)
    }

    init(
        endpoint: URL, session: URLSession, timeout: TimeInterval,
        headers: @escaping @Sendable () async throws -> [String: String]
    ) {
        self.endpoint = endpoint
        self.session = session
        self.timeout = timeout
        self.headers = headers
    }

    /// Posts `operation`; see the type's table for what each response means.
    ///
    /// - Throws: ``OutboxDeliveryFailure`` (retryable or permanent, as the table says), an
    ///   error of the `headers` closure, or `CancellationError` when the task was cancelled.
    public func deliver(_ operation: OutboxOperation) async throws {
        var request = URLRequest(url: endpoint, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.httpBody = operation.payload
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in try await headers() { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue(operation.id.uuidString, forHTTPHeaderField: "Idempotency-Key")
        request.setValue(operation.kind, forHTTPHeaderField: "RecordKeeper-Operation-Kind")

        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch let error as URLError where error.code == .cancelled && Task.isCancelled {
            // The delivering task was cancelled (URLSession reports that as URLError.cancelled
            // on Apple platforms and on Linux alike): a cancellation, which the processor
            // records as an attempt due again at once, not a failure to back off from.
            // (A CancellationError from the session passes through unchanged.)
            throw CancellationError()
        } catch let error as URLError {
            throw OutboxDeliveryFailure.retryable(
                "\(endpoint.absoluteString): \(Self.describe(error, timeout: session.configuration.timeoutIntervalForRequest))")
        }
        guard let http = response as? HTTPURLResponse else {
            throw OutboxDeliveryFailure.retryable("\(endpoint.absoluteString): the response was not HTTP")
        }
        let status = http.statusCode
        if (200..<300).contains(status) { return }
        let description = "HTTP \(status) from \(endpoint.absoluteString)" + Self.bodyExcerpt(data)
        switch status {
        case 408, 429, 500..<600:
            let retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap { Self.retryAfter($0, now: Date()) }
            throw OutboxDeliveryFailure.retryable(description, retryAfter: retryAfter)
        case 401:
            throw OutboxDeliveryFailure.retryable(description)
        default:
            throw OutboxDeliveryFailure.permanent(description)
        }
    }

    /// What a failed request means, in words (Foundation's own text on Linux is only
    /// "The operation could not be completed. (NSURLErrorDomain error -1001.)"), with the
    /// `URLError` code for searching. `timeout` is the one that applied: the session's.
    static func describe(_ error: URLError, timeout: TimeInterval) -> String {
        let what: String
        switch error.code {
        case .timedOut:
            let seconds = timeout.rounded() == timeout ? String(Int(timeout)) : String(timeout)
            what = "timed out: no answer within \(seconds) s (the session's timeoutIntervalForRequest); "
                + "the server may have applied it, so it is sent again with the same Idempotency-Key"
        case .cannotConnectToHost:
            what = "could not connect: nothing accepted the connection at this address"
        case .cannotFindHost, .dnsLookupFailed:
            what = "could not connect: the host name could not be resolved"
        case .networkConnectionLost:
            what = "the connection was lost before an answer arrived; the server may have applied it"
        case .notConnectedToInternet:
            what = "could not connect: there is no network connection"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected,
             .clientCertificateRequired:
            what = "the TLS connection failed (certificate or handshake)"
        case .cancelled:
            what = "the request was cancelled"
        case .badServerResponse:
            what = "the server's answer was not valid HTTP"
        default:
            what = error.localizedDescription
        }
        return "\(what) (URLError \(error.code.rawValue))"
    }

    /// The first 200 characters of a response body, for `lastError`.
    static func bodyExcerpt(_ data: Data) -> String {
        guard !data.isEmpty else { return "" }
        let text = String(decoding: data.prefix(200), as: UTF8.self)
        return ": " + text + (data.count > 200 ? "…" : "")
    }

    /// A `Retry-After` value: delay seconds, or an HTTP date (RFC 9110 IMF-fixdate).
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000))
    }
}
