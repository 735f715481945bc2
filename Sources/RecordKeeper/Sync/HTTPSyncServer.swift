public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A ``/RecordKeeperSync/RecordSyncServer`` reached through a sync relay (`recordkeeper-relay`) over HTTP or
/// HTTPS, with a bearer token: the way apps on devices sync, never holding database
/// credentials.
///
/// ```swift
/// let server = HTTPSyncServer(url: URL(string: "https://sync.example.com")!) {
///     try await session.currentToken()    // asked before every request, so it may refresh
/// }
/// let sync = RecordSync(store: store, server: server)
/// try await sync.start(space: "alice", collections: ["notes"])
/// try await sync.sync()
/// ```
///
/// The relay takes the space from the token; the `space` each call names is sent along and
/// must be the token's (another is ``/RecordKeeperSync/SyncError/Code/forbidden``, with nothing read or written).
///
/// | answer | thrown |
/// | --- | --- |
/// | 401 | ``/RecordKeeperSync/SyncError/Code/unauthorized`` (after one retry when the token provider gives another token): get a new token; the store is untouched |
/// | 403 | ``/RecordKeeperSync/SyncError/Code/forbidden``: the token does not grant this space, collection or push |
/// | 400 | ``/RecordKeeperSync/SyncError/Code/invalidRequest``, with the relay's reason |
/// | 410 with code `behindHorizon` | ``/RecordKeeperSync/SyncError/Code/behindHorizon``: the pull's cursor is behind the space's compaction horizon (``RecordSync`` resyncs) |
/// | 3xx | ``/RecordKeeperSync/SyncError/Code/unreachable``: redirects are never followed (a captive portal's, or a moved relay's), so the request and its token went nowhere else (on Linux, a session with a delegate of its own lets that delegate decide; the answer from another URL is refused either way) |
/// | 408, 429, 502, 503, 504, no connection, a timeout | ``/RecordKeeperSync/SyncError/Code/unreachable``, with ``/RecordKeeperSync/SyncError/retryAfter`` from `Retry-After` |
/// | 404, 405, another protocol version | ``/RecordKeeperSync/SyncError/Code/configuration``: the URL is not a relay of this protocol |
/// | a push of changes with item versions to a relay whose health does not say ``/RecordKeeperSync/RelayWire/Health/itemVersions`` | ``/RecordKeeperSync/SyncError/Code/configuration`` (nothing sent): an older relay would drop them |
/// | other | ``/RecordKeeperSync/SyncError/Code/serverFailure`` |
///
/// A push larger than the relay's body limit (its `GET /v1/health` says it, asked once) goes
/// in several requests, each of whole operations in order; only a single operation larger than
/// the limit is refused (``/RecordKeeperSync/SyncError/Code/invalidRequest``, nothing sent). Bodies are the
/// library's own JSON (``/RecordKeeperCoding/RecordJSONEncoder``) of the ``/RecordKeeperSync/RelayWire`` types.
///
/// The session's `timeoutIntervalForRequest` is the timeout that applies (on Linux always; see
/// ``HTTPOutboxTransport``). On Linux, `URLSession` lives in FoundationNetworking.
public struct HTTPSyncServer: RecordSyncServer {
    /// The relay's base URL (`https://sync.example.com`, or with a path prefix).
    public let url: URL
    let session: URLSession
    let token: @Sendable () async throws -> String
    let limits = RelayLimits()
    let pipeline = PullPipeline()
    let liveSessions = LiveSessions()

    /// Creates a client of the relay at `url`.
    ///
    /// - Parameters:
    ///   - url: the relay's base URL; the protocol's paths (`/v1/push`…) are appended to it.
    ///   - session: the session requests go through (its timeout applies).
    ///   - token: the bearer token, asked before every request (so it may refresh), and again
    ///     after a 401: a token other than the refused one is tried once more. A ``/RecordKeeperSync/SyncError``
    ///     it throws passes through; another error is ``/RecordKeeperSync/SyncError/Code/unauthorized``.
    public init(url: URL, session: URLSession = .shared, token: @escaping @Sendable () async throws -> String) {
        self.url = url
        self.session = session
        self.token = token
    }

    /// Pushes `operations`, in as many requests as the relay's body limit needs.
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError`` (see the type's table). When a later request fails, the earlier
    ///   ones stay applied: pushing the same operations again answers them as redeliveries.
    public func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try SyncRequestValidation.validatePush(space: space, operations: operations)
        if operations.isEmpty { return [] }
        // Pages read ahead before this push are stale for the records it writes.
        await pipeline.discard()
        // Each operation is encoded once: its bytes size the batches and make the bodies.
        let body = try PushBody(space: space, operations: operations)
        var outcomes: [SyncOutcome] = []
        var start = operations.startIndex
        var refreshedLimit = false
        try await checkCarriesItemVersions(operations)
        while start < operations.endIndex {
            let limit = try await health().maxBodyBytes
            let end = try body.batchEnd(from: start, limit: limit, relay: url)
            let batch = operations[start..<end]
            do {
                let response: RelayWire.PushResponse = try await send("push", post: body.request(start..<end))
                guard response.outcomes.count == batch.count,
                    zip(response.outcomes, batch).allSatisfy({ $0.operationID == $1.id })
                else {
                    throw SyncError(
                        .serverFailure,
                        "the relay at \(url.shownWithoutPassword) answered \(response.outcomes.count) outcome(s) that are not "
                            + "those of the \(batch.count) operation(s) pushed")
                }
                outcomes += response.outcomes
                start = end
            } catch is BodyTooLarge where !refreshedLimit {
                // The relay's limit changed since it was asked: ask again, split again, once.
                refreshedLimit = true
                await limits.forget()
            } catch let tooLarge as BodyTooLarge {
                throw SyncError(.invalidRequest, tooLarge.message)
            }
        }
        return outcomes
    }

    /// Pulls one page after `cursor`.
    ///
    /// When the relay says that more follows, the next page is asked for at once, while this
    /// one is read and handed back: a pull asking exactly for it (same space, cursor, limit
    /// and token) gets that answer, or its error; any other pull cancels it. Cancelling the
    /// pull cancels the page fetched ahead.
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError`` (see the type's table).
    public func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    /// Pulls one page of `collections` after `cursor` (every collection for `nil`): the relay
    /// filters (`collections=` in the query), within what the token grants.
    ///
    /// Every page is trimmed to `collections` here too: a relay older than the filter ignores
    /// `collections=` and answers every collection's changes, which are never handed on (the
    /// page then ends at its last change kept, and a page cut short that keeps none is followed
    /// by the next: see ``/RecordKeeperSync/SyncPullFilter``). Such a relay costs what it did, never a wrong answer.
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError`` (see the type's table); ``/RecordKeeperSync/SyncError/Code/invalidRequest`` for
    ///   bad collection names.
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?
    ) async throws -> SyncPage {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        guard let collections else { return try await page(space: space, after: cursor, limit: limit, collections: nil) }
        return try await SyncPullFilter.pull(after: cursor, collections: collections) { after in
            try await page(space: space, after: after, limit: limit, collections: collections)
        }
    }

    /// A live pull through the relay (`wait=` in the query, in whole seconds, rounded up): the
    /// relay holds the pull until a change of the space commits or the wait passes (or its own
    /// maximum, ``/RecordKeeperSync/RelayWire/Health/maxPullWait``, which is lower), then answers. The request's
    /// timeout is the session's `timeoutIntervalForRequest` plus the wait (a session like
    /// the given one, made once per wait). A relay older than live pulls ignores `wait` and
    /// answers at once: an empty page then means "nothing yet", as always.
    ///
    /// ```swift
    /// let page = try await server.pull(space: "alice", after: cursor, limit: 500, collections: nil, wait: .seconds(30))
    /// ```
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError`` (see the type's table); ``/RecordKeeperSync/SyncError/Code/invalidRequest`` for a
    ///   `wait` below zero or above ``/RecordKeeperSync/SyncPage/maximumWait``.
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try SyncRequestValidation.validateWait(wait)
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        let (seconds, rest) = wait.components
        let whole = Int(seconds) + (rest > 0 ? 1 : 0)
        // An empty answer before the wait passed, from a relay that holds no pull (an older
        // one, or `--max-pull-wait 0`): pulled again every `defaultPollInterval`, as a server
        // that cannot hold a request is, instead of answering at once (a caller's loop of live
        // pulls would ask without pause).
        return try await SyncPage.polling(for: wait, pollsAgain: { await !holdsPulls() }) { again in
            let asked = again ? 0 : whole
            guard let collections else {
                return try await page(space: space, after: cursor, limit: limit, collections: nil, wait: asked)
            }
            return try await SyncPullFilter.pull(after: cursor, collections: collections) { after in
                try await page(space: space, after: after, limit: limit, collections: collections, wait: asked)
            }
        }
    }

    /// Whether the relay holds live pulls: its health says a maximum wait above zero. A relay
    /// whose health cannot be read is taken to hold them (its answers stand as they are).
    private func holdsPulls() async -> Bool {
        do {
            return try await health().maxPullWait.map { $0 > 0 } ?? false
        } catch {
            return true
        }
    }

    /// One page as the relay answers it, through the pipeline.
    private func page(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Int = 0
    ) async throws -> SyncPage {
        let request = PullPipeline.Request(
            space: space, cursor: cursor, limit: limit, collections: collections, token: try await bearerToken(),
            wait: wait)
        let pipeline = pipeline
        return try await withTaskCancellationHandler {
            switch await pipeline.claim(request, fetch: pageFetcher) {
            case .kept(let page):
                return page
            case .ahead(let task):
                return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
            case .fetch(let id):
                return try await fetchPage(request, id: id)
            }
        } onCancel: {
            Task { await pipeline.cancel() }
        }
    }

    /// The relay's health and limits (`GET /v1/health`, no token), asked once and kept.
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError``: ``/RecordKeeperSync/SyncError/Code/unreachable`` when the relay cannot be
    ///   reached, ``/RecordKeeperSync/SyncError/Code/configuration`` when the URL is not a relay speaking
    ///   ``/RecordKeeperSync/RelayWire/version``.
    public func health() async throws -> RelayWire.Health {
        if let known = await limits.health { return known }
        let (data, response) = try await exchange("health check", path: RelayWire.healthPath, authorized: false)
        // A relay whose database does not answer says so with 503, and still gives its limits.
        if response.statusCode == 200 || response.statusCode == 503 {
            let health: RelayWire.Health
            do {
                health = try RecordJSONDecoder().decode(RelayWire.Health.self, from: data)
            } catch {
                throw SyncError(
                    .configuration,
                    "the answer of \(url.shownWithoutPassword)\(RelayWire.healthPath) is not a relay's health: \(error)",
                    underlying: error)
            }
            guard health.protocolVersion == RelayWire.version else {
                throw SyncError(
                    .configuration,
                    "the relay at \(url.shownWithoutPassword) speaks protocol version \(health.protocolVersion); this library "
                        + "speaks version \(RelayWire.version)")
            }
            await limits.remember(health)
            return health
        }
        throw try failure("health check", response, data)
    }

    /// Refuses, before anything is sent, to push changes with item versions through a relay
    /// that does not say it carries them (an older `recordkeeper-relay` would drop them, and
    /// other devices would migrate those payloads again).
    private func checkCarriesItemVersions(_ operations: [SyncOperation]) async throws {
        var versioned: Set<String> = []
        for operation in operations {
            for change in operation.changes where change.itemVersion != nil { versioned.insert(change.collection) }
        }
        guard !versioned.isEmpty, try await health().itemVersions != true else { return }
        throw SyncError(
            .configuration,
            "the relay at \(url.shownWithoutPassword) does not carry item versions (an older recordkeeper-relay): pushing "
                + "through it would drop the item versions of collection(s) "
                + versioned.sorted().map { "'\($0)'" }.joined(separator: ", ")
                + " and other devices would migrate those items again; upgrade the relay. Nothing was sent")
    }

    /// Encodes a request body with the library's codec.
    static func encoded(_ value: some Encodable) throws -> Data {
        do {
            return try RecordJSONEncoder().encode(value)
        } catch {
            throw SyncError(.invalidRequest, "the push could not be encoded: \(error)", underlying: error)
        }
    }

}

/// The relay's health answer, once known.
actor RelayLimits {
    private(set) var health: RelayWire.Health?

    func remember(_ health: RelayWire.Health) { self.health = health }
    func forget() { health = nil }
}

/// A 413 from the relay.
struct BodyTooLarge: Error {
    let message: String
}
