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
/// | no network, host name not resolved, connection refused | ``OutboxDeliveryFailure/unreachable(_:)``: retried, not counted toward ``RetryPolicy/maximumAttempts`` |
/// | timeout, connection lost, 408, 429, 5xx | retried, not before `Retry-After` (seconds or an HTTP date) |
/// | 401 | retried (the token may have been refreshed by then) |
/// | 409 | retried: the answer the Idempotency-Key draft gives while a request with the same key is still being processed (an earlier attempt abandoned or timed out) |
/// | 3xx | retried: redirects are never followed (a captive portal's login page would answer 200 to a bodiless GET; the headers would go to another host) |
/// | any other status | permanent: dead letter, with the status and the start of the body |
///
/// The receiver must dedupe by `Idempotency-Key`: an operation whose outcome was unknown (a
/// timeout, a lost connection, a process that died) is sent again with the same key.
///
/// Cancelling the delivering task throws `CancellationError` at once, so an
/// ``OutboxProcessor`` that is cancelled records the attempt and leaves the operation due
/// again at once. On Apple platforms the request is cancelled. On Linux it is abandoned, not
/// cancelled (FoundationNetworking can deadlock cancelling a request): it may still reach the
/// server, also while a later attempt with the same `Idempotency-Key` runs, so the receiver
/// must dedupe concurrent requests with one key, not only successive ones.
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
    /// The longest a delivery may take, whatever the session's timeout: three quarters of
    /// ``OutboxProcessor/leaseDuration``, so that a delivery's attempt always ends (and is
    /// recorded) before its claim does. On Linux the request itself is abandoned, not
    /// cancelled, and may still reach the server later: the receiver dedupes by
    /// `Idempotency-Key`, concurrent requests too.
    public static let deliveryDeadline: Duration = .seconds(90)
    /// ``deliveryDeadline`` (tests shorten it).
    let deadline: Duration

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
        endpoint: URL, session: URLSession, timeout: TimeInterval, deadline: Duration = deliveryDeadline,
        headers: @escaping @Sendable () async throws -> [String: String]
    ) {
        self.endpoint = endpoint
        self.session = session
        self.timeout = timeout
        self.deadline = deadline
        self.headers = headers
    }

    /// Posts `operation`; see the type's table for what each response means.
    ///
    /// It ends within ``deliveryDeadline`` (a retryable failure then) also through a session
    /// whose timeout is as long or longer, and then also when the `headers` closure does not
    /// return: the request is cancelled (abandoned on Linux, as a cancelled delivery's is). A
    /// session with a shorter timeout (the default 60 s) ends the request itself; the `headers`
    /// closure must then return.
    ///
    /// - Throws: ``OutboxDeliveryFailure`` (retryable or permanent, as the table says), an
    ///   error of the `headers` closure, or `CancellationError` when the task was cancelled.
    public func deliver(_ operation: OutboxOperation) async throws {
        // A session whose own timeout ends a request before the deadline needs no race: the
        // request runs in the caller's task, with no task of its own to be scheduled.
        if session.configuration.timeoutIntervalForRequest < deadline.seconds { return try await post(operation) }
        let handoff = ResultHandoff<Void>()
        let attempt = Task {
            do {
                try await post(operation)
                handoff.finish(.success(()))
            } catch {
                handoff.finish(.failure(error))
            }
        }
        let (deadline, endpoint) = (deadline, endpoint)
        let timer = Task {
            try await Task.sleep(for: deadline)
            handoff.finish(.failure(OutboxDeliveryFailure.retryable(
                "\(endpoint.shownWithoutPassword): no answer within \(deadline), the longest a delivery may take under "
                    + "the outbox's lease (the session's timeout is longer, or the headers closure did not return); the "
                    + "server may have applied it, so it is sent again with the same Idempotency-Key")))
            attempt.cancel()
        }
        defer { timer.cancel() }
        do {
            try await handoff.value()
        } catch is CancellationError where Task.isCancelled {
            attempt.cancel()
            throw CancellationError()
        }
    }

    /// One POST of `operation` and what its answer means.
    private func post(_ operation: OutboxOperation) async throws {
        var request = URLRequest(url: endpoint, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.httpBody = operation.payload
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in try await headers() { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue(operation.id.uuidString, forHTTPHeaderField: "Idempotency-Key")
        request.setValue(operation.kind, forHTTPHeaderField: "RecordKeeper-Operation-Kind")

        // A cancelled delivery is a CancellationError, which the processor records as an
        // attempt due again at once, not a failure to back off from.
        let (data, response) = try await HTTPClientSupport.send(
            request, through: session,
            afterTimeout: "the server may have applied it, so it is sent again with the same Idempotency-Key"
        ) { words, error in
            let message = "\(endpoint.shownWithoutPassword): \(words)"
            return Self.neverReachedServer(error) ? OutboxDeliveryFailure.unreachable(message) : .retryable(message)
        }
        guard let http = response as? HTTPURLResponse else {
            throw OutboxDeliveryFailure.retryable("\(endpoint.shownWithoutPassword): the response was not HTTP")
        }
        let status = http.statusCode
        if (200..<300).contains(status) { return }
        if (300..<400).contains(status) {
            throw OutboxDeliveryFailure.retryable("\(endpoint.shownWithoutPassword): " + HTTPClientSupport.redirectWords(http))
        }
        let description = "HTTP \(status) from \(endpoint.shownWithoutPassword)" + HTTPClientSupport.bodyExcerpt(data)
        switch status {
        case 408, 409, 429, 500..<600:
            let retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap { HTTPClientSupport.retryAfter($0, now: Date()) }
            throw OutboxDeliveryFailure.retryable(description, retryAfter: retryAfter)
        case 401:
            throw OutboxDeliveryFailure.retryable(description)
        default:
            throw OutboxDeliveryFailure.permanent(description)
        }
    }

    /// Whether a request that failed with `error` never reached a server: no network (or none
    /// this app may use now), a host name not resolved, nothing accepting the connection. A
    /// timeout, a connection lost mid-request or a TLS failure may have reached one: those
    /// count as attempts.
    static func neverReachedServer(_ error: URLError) -> Bool {
        switch error.code {
        case .notConnectedToInternet, .cannotFindHost, .dnsLookupFailed, .cannotConnectToHost,
             .internationalRoamingOff, .callIsActive, .dataNotAllowed:
            true
        default:
            false
        }
    }
}
