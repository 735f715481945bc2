import Foundation
import RecordKeeperSync

/// A small HTTP/1.1 server over GNU libmicrohttpd: exact routes to `async` handlers, bodies
/// read within a limit, timeouts that cut off slow clients, TLS, and a graceful shutdown.
///
/// ```swift
/// let server = try HTTPServer(
///     configuration: .init(host: "127.0.0.1", port: 8080),
///     routes: [HTTPRoute(.get, "/v1/health") { _ in HTTPResponse(status: 200, text: "ok") }])
/// print("listening on port \(server.port)")
/// ...
/// await server.shutdown(gracePeriod: .seconds(30))
/// ```
///
/// ## Threads
///
/// libmicrohttpd runs in its *internal polling thread* mode with epoll on Linux (poll on
/// macOS), ``Configuration/pollingThreads`` threads (one by default), and
/// `MHD_ALLOW_SUSPEND_RESUME`. A polling thread only moves bytes: it reads requests, appends
/// body pieces, and writes responses. Once a request is complete, its connection is
/// *suspended* (`MHD_suspend_connection`: taken out of the epoll set) and its handler runs in a
/// Swift task on the cooperative pool; when the handler returns, the task stores the response
/// and resumes the connection (`MHD_resume_connection`, safe from any thread), and the polling
/// thread sends it. So a request whose handler waits (for PostgreSQL, or a live pull holding
/// until a change commits) costs a suspended socket and a suspended task, never a thread:
/// 1,000 held requests cost the same threads as none. libmicrohttpd's thread-per-connection
/// mode would cost a thread for each (and does not support suspension at all); its thread-pool
/// mode is this mode with several polling threads.
///
/// ## Limits
///
/// Bodies over ``Configuration/maxBodyBytes`` are answered 413 (at once when the
/// `Content-Length` says so; otherwise when the body grows past it). Headers are due within
/// ``Configuration/headerTimeout`` however slowly the bytes trickle in (see
/// ``Configuration/headerTimeout``); an idle connection closes after
/// ``Configuration/idleTimeout``; at most ``Configuration/connectionLimit`` connections are
/// open at once (more wait to be accepted).
///
/// ## Logging
///
/// One line per request, to ``Configuration/log``: method, route (never the raw path), status,
/// duration, and the handler's ``HTTPResponse/logFields``; never bodies, query values or
/// headers (tokens travel in one).
///
/// A server keeps running until ``shutdown(gracePeriod:)`` (it stays alive while it runs, even
/// without a reference to it).
public final class HTTPServer: Sendable {
    private let core: HTTPServerCore
    private let daemon: MicroHTTPDDaemon
    /// The port the server listens on (the one picked when the configuration said 0).
    public let port: UInt16
    /// The address listened on, as `host:port` (`[host]:port` for IPv6).
    public let address: String
    /// Whether libmicrohttpd polls with epoll (Linux); otherwise with poll.
    public let usesEpoll: Bool
    private let shutdownTask = Protected<Task<Void, Never>?>(nil)
    private let onDrain: (@Sendable () -> Void)?

    /// Whether this build of libmicrohttpd supports TLS (`MHD_FEATURE_TLS`). Debian's and
    /// Homebrew's are built with GnuTLS, so they do.
    public static var supportsTLS: Bool { MicroHTTPDDaemon.supportsTLS }

    /// Starts listening and serving `routes`.
    ///
    /// - Parameters:
    ///   - configuration: address, limits, timeouts, TLS, log.
    ///   - routes: the exact method and path of each endpoint; other paths are answered 404,
    ///     other methods of a known path 405.
    ///   - observer: called once per completed request (for metrics), on a polling thread:
    ///     it must be quick and must not block.
    ///   - onDrain: called once when ``shutdown(gracePeriod:)`` begins, after new requests
    ///     start being refused: the place to end requests that wait for nothing in particular
    ///     (held live pulls), so that the grace period goes to those that do work.
    /// Starting a server makes the process ignore SIGPIPE (writes to a peer that has gone fail
    /// instead of ending the process).
    ///
    /// - Throws: ``HTTPServerError``: a bad configuration, or libmicrohttpd could not start
    ///   (the address is in use, the TLS certificate or key is invalid).
    public init(
        configuration: Configuration, routes: [HTTPRoute],
        observer: (@Sendable (HTTPRequestSummary) -> Void)? = nil, onDrain: (@Sendable () -> Void)? = nil
    ) throws(HTTPServerError) {
        if configuration.maxBodyBytes < 0 || configuration.connectionLimit < 1 || configuration.pollingThreads < 1 {
            throw HTTPServerError(
                .configuration, "the body limit must be 0 or more, the connection limit and polling threads 1 or more")
        }
        if configuration.headerTimeout <= .zero || configuration.bodyTimeout <= .zero
            || configuration.idleTimeout < .seconds(1)
        {
            throw HTTPServerError(.configuration, "the timeouts must be positive (the idle timeout at least 1 s)")
        }
        let address = try SocketAddress(host: configuration.host, port: configuration.port)
        // A write to a peer that has gone (a TLS alert to a client that hung up) must fail with
        // EPIPE, not end the process: libmicrohttpd leaves SIGPIPE to the application.
        signal(SIGPIPE, SIG_IGN)
        let core = HTTPServerCore(configuration: configuration, routes: routes, observer: observer)
        // The daemon's callbacks reach the core through an unretained pointer: the core keeps
        // itself alive until the daemon has stopped.
        let retained = Unmanaged.passRetained(core)
        let daemon: MicroHTTPDDaemon
        do {
            daemon = try MicroHTTPDDaemon.start(configuration: configuration, address: address, core: core)
        } catch {
            retained.release()
            throw error
        }
        _ = core.takeLibraryMessages()
        core.deadlines.startWatchdog()
        self.core = core
        self.daemon = daemon
        self.onDrain = onDrain
        self.port = daemon.port
        self.usesEpoll = daemon.usesEpoll
        self.address = address.withPort(daemon.port).description
    }

    /// Open connections, requests being received or answered, and handlers running (each of
    /// those holds a suspended connection and no thread).
    public var statistics: (connections: Int, requests: Int, handlers: Int) {
        (core.deadlines.count, core.liveExchanges, core.runningHandlers)
    }

    /// Whether ``shutdown(gracePeriod:)`` has begun: new requests are answered 503.
    public var isShuttingDown: Bool { core.isShuttingDown }

    /// Stops the server gracefully, and returns once it has stopped.
    ///
    /// 1. From now on every new request is answered 503 with `Retry-After` and
    ///    `Connection: close` (also on connections kept alive), while requests whose handlers
    ///    run go on (the `onDrain` given at start is called, to end those that only wait).
    /// 2. When they have all answered, or `gracePeriod` has passed, handlers still running are
    ///    cancelled (a handler must then answer promptly; this waits for them).
    /// 3. The server stops accepting connections, lets the last responses go out (for at most
    ///    a few seconds), closes every connection and stops its threads.
    ///
    /// Calling it again, or concurrently, waits for the same shutdown.
    public func shutdown(gracePeriod: Duration = .seconds(30)) async {
        let task = shutdownTask.withLock { existing -> Task<Void, Never> in
            if let existing { return existing }
            let task = Task { [core, daemon, onDrain] in
                await Self.drain(core: core, daemon: daemon, gracePeriod: gracePeriod, onDrain: onDrain)
            }
            existing = task
            return task
        }
        await task.value
    }

    private static func drain(
        core: HTTPServerCore, daemon: MicroHTTPDDaemon, gracePeriod: Duration, onDrain: (@Sendable () -> Void)?
    ) async {
        guard core.beginDraining() else { return }
        onDrain?()
        let clock = ContinuousClock()
        if !(await waitUntil(clock.now + gracePeriod, { core.runningHandlers == 0 })) {
            core.cancelHandlers()
            _ = await waitUntil(nil) { core.runningHandlers == 0 }
        }
        let listening = daemon.quiesce()
        _ = await waitUntil(clock.now + .seconds(5)) { core.liveExchanges == 0 }
        // The watchdog stops first: once the daemon has closed its sockets, none may be touched.
        core.deadlines.stopWatchdog()
        daemon.stop(listeningSocket: listening)
        core.markStopped()
        Unmanaged.passUnretained(core).release()
    }

    /// Polls `condition` every few milliseconds until it holds (true) or `deadline` passes
    /// (false). Only shutdown waits like this, for state that libmicrohttpd's threads change.
    private static func waitUntil(_ deadline: ContinuousClock.Instant?, _ condition: () -> Bool) async -> Bool {
        while !condition() {
            if let deadline, ContinuousClock.now >= deadline { return false }
            do {
                try await Task.sleep(for: .milliseconds(5))
            } catch {
                // The shutdown task is never cancelled; if it were, keep polling without sleeping.
                await Task.yield()
            }
        }
        return true
    }
}
