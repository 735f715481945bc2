import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPSyncServer {
    /// Sends a `POST` of `body` to the push path and decodes the answer.
    func send<Answer: Decodable>(_ operation: String, post body: Data) async throws -> Answer {
        let (data, response) = try await exchange(operation, path: RelayWire.pushPath, body: body)
        return try decode(operation, response, data)
    }

    func decode<Answer: Decodable>(
        _ operation: String, _ response: HTTPURLResponse, _ data: Data,
        decoder: (Data) throws -> Answer = { try RecordJSONDecoder().decode(Answer.self, from: $0) }
    ) throws -> Answer {
        guard response.statusCode == 200 else { throw try failure(operation, response, data) }
        do {
            return try decoder(data)
        } catch {
            throw SyncError(
                .serverFailure,
                "the relay at \(url.shownWithoutPassword) answered the \(operation) with what is not a \(operation) answer: \(error)",
                underlying: error)
        }
    }

    /// One request with the token (unless `authorized` is false); every failure to get an
    /// answer is a ``/RecordKeeperSync/SyncError``. After a 401 the token provider is asked again: a token other
    /// than the refused one is tried once more (a 401 means the relay read and wrote nothing);
    /// the same token, or a second 401, is the answer. `given` is the token to try first
    /// (asked by the caller), else the provider is asked.
    func exchange(
        _ operation: String, path: String, query: String? = nil, body: Data? = nil, authorized: Bool = true,
        token given: String? = nil, heldFor wait: Int = 0
    ) async throws -> (Data, HTTPURLResponse) {
        var request = try request(path: path, query: query, body: body)
        // A live pull's answer may take its wait: the request's timeout is extended by it.
        var session = session
        if wait > 0 {
            session = await liveSessions.session(extending: session, by: wait)
            request.timeoutInterval = session.configuration.timeoutIntervalForRequest
        }
        guard authorized else { return try await exchange(operation, request, through: session) }
        var token: String
        if let given { token = given } else { token = try await bearerToken() }
        var retried = false
        while true {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let answer = try await exchange(operation, request, through: session)
            guard answer.1.statusCode == 401, !retried else { return answer }
            retried = true
            let refreshed = try await bearerToken()
            guard refreshed != token else { return answer }
            token = refreshed
        }
    }

    /// The request of `path?query`, a `POST` of `body` when there is one, without a token.
    private func request(path: String, query: String?, body: Data?) throws -> URLRequest {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw SyncError(.configuration, "\(url.shownWithoutPassword) is not a URL a relay's path can be appended to")
        }
        let base = components.percentEncodedPath
        components.percentEncodedPath = base.trimmingSuffix("/") + path
        components.percentEncodedQuery = query
        guard let target = components.url else {
            throw SyncError(.configuration, "\(url.shownWithoutPassword) is not a URL a relay's path can be appended to")
        }
        var request = URLRequest(url: target)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.httpMethod = "POST"
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// Sends `request` once; every failure to get an answer is a ``/RecordKeeperSync/SyncError``.
    private func exchange(
        _ operation: String, _ request: URLRequest, through session: URLSession
    ) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await HTTPClientSupport.send(
            request, through: session,
            afterTimeout: request.httpBody == nil
                ? "nothing was changed"
                : "the relay may have applied the push; pushing the same operations again applies none twice"
        ) { [url] words, error in
            // A URL this device cannot use at all is a setting to correct, not a server to wait
            // for. An answer that is not HTTP stays "unreachable" (an empty reply of a relay
            // restarting or at its connection limit looks the same): its words suggest https.
            let code: SyncError.Code = error.code == .badURL || error.code == .unsupportedURL ? .configuration : .unreachable
            return SyncError(code, "the \(operation) through \(url.shownWithoutPassword) failed: \(words)", underlying: error)
        }
        guard let http = response as? HTTPURLResponse else {
            throw SyncError(.serverFailure, "the answer of \(url.shownWithoutPassword) to the \(operation) was not HTTP")
        }
        return (data, http)
    }

    func bearerToken() async throws -> String {
        do {
            return try await token()
        } catch let error as SyncError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw SyncError(.unauthorized, "the token provider failed: \(error); nothing was sent", underlying: error)
        }
    }

    /// The error an answer other than 200 means (see the type's table).
    func failure(_ operation: String, _ response: HTTPURLResponse, _ data: Data) throws -> any Error {
        let status = response.statusCode
        let detail: RelayWire.ErrorBody.Detail?
        do {
            detail = try RecordJSONDecoder().decode(RelayWire.ErrorBody.self, from: data).error
        } catch {
            detail = nil  // not a relay's error body (a proxy's page): its start is quoted below
        }
        let reason = detail?.message ?? "no reason given" + HTTPClientSupport.bodyExcerpt(data)
        let said = "the relay at \(url.shownWithoutPassword) refused the \(operation) (HTTP \(status)): \(reason)"
        switch status {
        case 400:
            return SyncError(.invalidRequest, said + "; nothing was applied")
        case 401:
            return SyncError(.unauthorized, said + "; nothing was read or written: get a new token")
        case 403:
            return SyncError(.forbidden, said + "; nothing was read or written")
        case 413:
            return BodyTooLarge(message: said)
        case 410 where detail?.code == SyncError.Code.behindHorizon.name:
            return SyncError(.behindHorizon, said)
        case 404, 405:
            return SyncError(.configuration, said + "; is \(url.shownWithoutPassword) a sync relay of protocol v\(RelayWire.version)?")
        case 300..<400:
            return SyncError(
                .unreachable, "the \(operation) through \(url.shownWithoutPassword) failed: " + HTTPClientSupport.redirectWords(response)
                    + "; nothing was changed by this answer")
        case 408, 429, 502, 503, 504:
            let retryAfter = response.value(forHTTPHeaderField: "Retry-After")
                .flatMap { HTTPClientSupport.retryAfter($0, now: Date()) }
            return SyncError(
                .unreachable, "the relay at \(url.shownWithoutPassword) cannot serve the \(operation) now (HTTP \(status)): \(reason)",
                retryAfter: retryAfter)
        default:
            return SyncError(.serverFailure, said)
        }
    }
}

/// The sessions of live pulls: the server's session with its request timeout extended by a
/// pull's wait (on Linux the session's timeout is the one that applies, never the request's),
/// made once per wait asked and kept while the ``HTTPSyncServer`` lives. Each has the server
/// session's delegate and delegate queue, so an app's certificate pinning or private trust
/// applies to live pulls (which carry the token) as to every other request.
actor LiveSessions {
    private var sessions: [Int: URLSession] = [:]

    func session(extending base: URLSession, by seconds: Int) -> URLSession {
        if let known = sessions[seconds] { return known }
        // A copy: the base session's own configuration stays as it is.
        let configuration = (base.configuration.copy() as? URLSessionConfiguration) ?? base.configuration
        configuration.timeoutIntervalForRequest += TimeInterval(seconds)
        let session = URLSession(configuration: configuration, delegate: base.delegate, delegateQueue: base.delegateQueue)
        sessions[seconds] = session
        return session
    }

    deinit {
        for session in sessions.values { session.finishTasksAndInvalidate() }
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
