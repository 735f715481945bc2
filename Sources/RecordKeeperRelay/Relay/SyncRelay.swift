public import RecordKeeperSync
import Foundation

/// Serves a ``RecordKeeper/RecordSyncServer`` to devices over HTTP, with bearer tokens instead
/// of database credentials: the relay is the only holder of the server's connection string.
///
/// ```swift
/// let server = try await PostgresSyncServer.connect(conninfo, connections: 8)
/// let verifier = JWTVerifier(.init(key: try .hs256(secret: secret)))
/// let relay = SyncRelay(server: server, configuration: .init(verifier: verifier))
/// let http = try relay.serve(HTTPServer.Configuration(host: "0.0.0.0", port: 8080))
/// ...
/// await http.shutdown()
/// ```
///
/// Endpoints (docs/RELAY.md "Protocol"):
/// - `POST /v1/push`: `{"operations":[SyncOperation…]}` → `{"outcomes":[SyncOutcome…]}`.
/// - `GET /v1/pull?after=COUNTER[&afterCollection=C&afterKey=K][&limit=N][&wait=S]` → a `SyncPage`;
///   with `wait`, a live pull: held (no thread, no database connection) until a change of the
///   space commits or `S` seconds pass (at most ``Configuration/maxPullWait``).
/// - `GET /v1/health`: whether the database answers, and the relay's limits (no token needed).
/// - `GET /metrics`: Prometheus text (no token needed; keep it on a private network).
///
/// Authorization comes from the token alone (``RelayAccess``): its `space` is the space of
/// every request; a request that names another space (`"space"` in a push body, `space=` in a
/// pull query) is answered 403 and nothing is read or written. A read-only token cannot push
/// (403); a token with a collection list cannot push to other collections (403, nothing of
/// the push applied) and pulls only those collections' changes. Bad input is 400 with the
/// reason, and nothing is written.
public final class SyncRelay: Sendable {
    /// How the relay authorizes and pages.
    public struct Configuration: Sendable {
        /// Verifies bearer tokens.
        public var verifier: JWTVerifier
        /// The largest request body (also set on the HTTP server by ``SyncRelay/serve(_:)``).
        public var maxBodyBytes: Int = 8 << 20
        /// The page size of a pull that gives no `limit`.
        public var defaultPullLimit: Int = 1000
        /// The largest page; a larger `limit` is lowered to it (the device pulls on: `hasMore`).
        public var maxPullLimit: Int = 10_000
        /// The most pages one pull answer holds when the client asks for several (`pages=`),
        /// at most ``RecordKeeper/RelayWire/maximumPagesPerAnswer``; 1 answers one page per
        /// request, as relays before `pages` did. An answer also stops at ``maxPullLimit``
        /// changes in all.
        public var maxPagesPerAnswer: Int = RelayWire.maximumPagesPerAnswer
        /// The payload bytes an answer pulled page by page stops adding pages at
        /// (``/RecordKeeperSync/SyncPage/payloadBudget``; a test of paging by size sets a small one).
        package var pullPayloadBudget: Int = SyncPage.payloadBudget
        /// The longest a live pull is held (`wait=` in the query); a longer wait is lowered to
        /// it. At most ``RecordKeeper/SyncPage/maximumWait``; 60 s unless set.
        public var maxPullWait: Duration = .seconds(60)
        /// How many answers of devices catching up the relay reads ahead at most (each up to
        /// ``maxPullLimit`` changes, kept in memory until asked for, at most
        /// ``pullAheadKeptFor``); 0 reads none ahead. See docs/RELAY.md "Pulls read ahead".
        public var pullsAhead: Int = 16
        /// How long an answer read ahead waits for the pull that asks for it before it is
        /// dropped (its device went away or moved on); 30 s unless set.
        public var pullAheadKeptFor: Duration = .seconds(30)
        /// Whether the database answers, for `GET /v1/health` (throws when it does not).
        public var healthCheck: @Sendable () async throws -> Void = {}
        /// Where server failures are described (never payloads or tokens); standard error by
        /// default.
        public var log: @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }

        /// Creates a configuration.
        public init(verifier: JWTVerifier) {
            self.verifier = verifier
        }
    }

    let server: any RecordSyncServer
    let configuration: Configuration
    let metrics = RelayMetrics()
    let heldPulls = RelayHeldPulls()
    let pullAhead: RelayPullAhead
    private let http = Protected<HTTPServer?>(nil)
    /// The health check running now, which health requests arriving meanwhile share.
    private let healthCheckRunning = Protected<Task<Void, any Error>?>(nil)

    /// Creates a relay in front of `server`.
    public init(server: any RecordSyncServer, configuration: Configuration) {
        var configuration = configuration
        configuration.maxPullWait = min(max(configuration.maxPullWait, .zero), SyncPage.maximumWait)
        self.server = server
        self.configuration = configuration
        self.pullAhead = RelayPullAhead(capacity: configuration.pullsAhead, keptFor: configuration.pullAheadKeptFor)
    }

    /// How many live pulls the relay holds now (also the gauge `recordkeeper_relay_live_pulls_held`).
    public var livePullsHeld: Int { heldPulls.count }

    /// Answers every held live pull at once with its empty page, and each later one likewise:
    /// for a shutdown (``serve(_:)``'s server calls it as it starts draining, so its grace
    /// period is not spent waiting for pulls that wait for nothing).
    public func endLivePulls() {
        heldPulls.drain()
        pullAhead.drain()
    }

    /// The relay's endpoints, for an ``HTTPServer`` of your own (``serve(_:)`` does it all).
    public var routes: [HTTPRoute] {
        [
            // A push's body is read only for a token that verifies; the other routes read none.
            HTTPRoute(.post, "/v1/push", screen: { [self] headers in refusalBeforePushBody(headers) }) { [self] request in
                await push(request)
            },
            HTTPRoute(.get, "/v1/pull", takesBody: false) { [self] request in await pull(request) },
            HTTPRoute(.get, "/v1/health", takesBody: false) { [self] _ in await health() },
            HTTPRoute(.get, "/metrics", takesBody: false) { [self] _ in metricsResponse() },
        ]
    }

    /// Records a completed request in the metrics: pass to ``HTTPServer``'s observer.
    public func observe(_ summary: HTTPRequestSummary) {
        metrics.record(summary)
    }

    /// Starts an ``HTTPServer`` serving the relay (with the relay's body limit).
    ///
    /// - Throws: ``HTTPServerError`` when the server cannot start.
    public func serve(_ configuration: HTTPServer.Configuration) throws(HTTPServerError) -> HTTPServer {
        var configuration = configuration
        configuration.maxBodyBytes = self.configuration.maxBodyBytes
        let server = try HTTPServer(
            configuration: configuration, routes: routes,
            observer: { [metrics] summary in metrics.record(summary) },
            onDrain: { [heldPulls, pullAhead] in
                heldPulls.drain()
                pullAhead.drain()
            })
        http.withLock { $0 = server }
        return server
    }

    private func health() async -> HTTPResponse {
        var health = RelayWire.Health(
            status: "ok", protocolVersion: RelayWire.version, maxBodyBytes: configuration.maxBodyBytes,
            maxPullLimit: configuration.maxPullLimit, itemVersions: true,
            maxPullWait: Int(configuration.maxPullWait.components.seconds))
        var status = 200
        do {
            try await sharedHealthCheck()
        } catch {
            configuration.log("event=health_check_failed error=" + HTTPRequestSummary.logValue(String(describing: error)))
            health.status = "unavailable"
            health.reason = "the database does not answer"
            status = 503
        }
        return RelayResponses.json(status, health)
    }

    /// Runs the configured health check, or waits for the one running: a flood of health
    /// requests (the endpoint takes no token) runs one check at a time, not one per request.
    private func sharedHealthCheck() async throws {
        let check = configuration.healthCheck
        let task = healthCheckRunning.withLock { running in
            if let running { return running }
            let task = Task { try await check() }
            running = task
            return task
        }
        defer { healthCheckRunning.withLock { if $0 == task { $0 = nil } } }
        try await task.value
    }

    private func metricsResponse() -> HTTPResponse {
        var gauges: [(name: String, help: String, value: Int)] = [
            ("recordkeeper_relay_live_pulls_held", "Live pulls held now (each holds no thread).", heldPulls.count)
        ]
        if let server = http.withLock({ $0 }) {
            let statistics = server.statistics
            gauges += [
                ("recordkeeper_relay_open_connections", "Connections open now.", statistics.connections),
                ("recordkeeper_relay_requests_in_progress", "Requests being received or answered now.", statistics.requests),
                ("recordkeeper_relay_handlers_running", "Requests being handled now (each holds no thread).", statistics.handlers),
            ]
        }
        var response = HTTPResponse(status: 200, body: Data(metrics.render(gauges: gauges).utf8))
        response.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        return response
    }
}
