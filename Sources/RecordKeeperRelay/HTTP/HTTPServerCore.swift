import Foundation
import RecordKeeperSync

/// What an ``HTTPServer`` does with each request, called from libmicrohttpd's callbacks
/// (``MicroHTTPDCallbacks``), and the state its shutdown waits on.
///
/// The callbacks of one connection all run on the polling thread that owns it, so the
/// exchange of a request needs no lock; what several threads share (the running handlers, the
/// draining flag, the counts) is in ``state``.
final class HTTPServerCore: Sendable {
    enum Phase: Sendable {
        case running
        /// Shutting down: new requests are answered 503 and `Connection: close`.
        case draining
        case stopped
    }

    enum Handler: Sendable {
        /// Registered; its task is being created.
        case starting
        case running(Task<Void, Never>)
    }

    struct State: Sendable {
        var phase = Phase.running
        var nextHandler = 0
        /// Handlers running, by id; the task is attached right after it is created.
        var handlers: [Int: Handler] = [:]
        /// Exchanges begun (request line read) and not yet completed.
        var liveExchanges = 0
        /// libmicrohttpd's messages while starting (the reason a start failed).
        var startMessages: [String] = []
        var starting = true
    }

    let configuration: HTTPServer.Configuration
    let router: HTTPRouter
    let observer: (@Sendable (HTTPRequestSummary) -> Void)?
    let deadlines: ReceiveDeadlines
    let state = Protected(State())

    init(
        configuration: HTTPServer.Configuration, routes: [HTTPRoute],
        observer: (@Sendable (HTTPRequestSummary) -> Void)?
    ) {
        self.configuration = configuration
        self.router = HTTPRouter(routes)
        self.observer = observer
        self.deadlines = ReceiveDeadlines(
            headerTimeout: configuration.headerTimeout, bodyTimeout: configuration.bodyTimeout,
            sendTimeout: configuration.sendTimeout, idleTimeout: configuration.idleTimeout, log: configuration.log)
    }

    private func key(_ connection: OpaquePointer) -> Int { Int(bitPattern: UnsafeRawPointer(connection)) }

    // MARK: Connections

    func connectionStarted(_ connection: OpaquePointer, socket: Int32) {
        deadlines.connectionStarted(key(connection), socket: socket)
    }

    func connectionClosed(_ connection: OpaquePointer) {
        deadlines.connectionClosed(key(connection))
    }

    func libraryMessage(_ message: String) {
        let starting = state.withLock { state in
            if state.starting { state.startMessages.append(message) }
            return state.starting
        }
        if !starting { configuration.log("event=libmicrohttpd message=" + HTTPRequestSummary.logValue(message)) }
    }

    func takeLibraryMessages() -> [String] {
        state.withLock { state in
            state.starting = false
            return state.startMessages
        }
    }

    // MARK: Requests

    func requestStarted(on connection: OpaquePointer) -> HTTPExchange {
        state.withLock { $0.liveExchanges += 1 }
        deadlines.requestLineReceived(key(connection))
        return HTTPExchange(started: .now)
    }

    /// The headers arrived. Answers at once what needs no body (no route, a body announced
    /// over the limit, shutting down); otherwise reads on.
    func headersReceived(_ exchange: HTTPExchange, on connection: OpaquePointer, method: String, path: String) -> Bool {
        exchange.phase = .body
        exchange.method = HTTPMethod(rawValue: method)
        exchange.path = path
        deadlines.headersReceived(key(connection))
        let values = MicroHTTPDConnection.values(of: connection)
        exchange.headers = values.headers
        exchange.query = values.query
        exchange.malformed = values.malformed
        let match = router.match(method: exchange.method, path: path)
        switch match {
        case .found(let route): exchange.route = route.path
        case .methodNotAllowed: exchange.route = path
        case .notFound: break
        }
        // Shutting down: 503 for every request, logged and counted under its route.
        if state.withLock({ $0.phase != .running }) {
            return respond(exchange, ErrorBodies.unavailable(), on: connection)
        }
        let route: HTTPRoute
        switch match {
        case .notFound:
            return respond(exchange, ErrorBodies.response(404, "no such endpoint"), on: connection)
        case .methodNotAllowed(let allowed):
            var response = ErrorBodies.response(405, "\(method) is not allowed here")
            response.headers.set("Allow", allowed.map(\.rawValue).joined(separator: ", "))
            return respond(exchange, response, on: connection)
        case .found(let found):
            route = found
        }
        // Refused before a byte of the body is read or buffered: a malformed request (its
        // headers could not be screened, so its body must not be read either) and one the
        // route's screen refuses.
        if let malformed = exchange.malformed {
            return respond(exchange, ErrorBodies.response(400, malformed), on: connection)
        }
        if let refusal = route.screen?(exchange.headers) {
            return respond(exchange, refusal, on: connection)
        }
        exchange.bodyLimit = route.takesBody ? configuration.maxBodyBytes : 0
        if let length = exchange.headers["Content-Length"] {
            guard let bytes = Int(length.trimmingCharacters(in: .whitespaces)), bytes >= 0 else {
                return respond(exchange, ErrorBodies.response(400, "the Content-Length is not a number"), on: connection)
            }
            if bytes > exchange.bodyLimit {
                return respond(exchange, ErrorBodies.tooLarge(limit: exchange.bodyLimit), on: connection)
            }
            exchange.body.reserveCapacity(bytes)
        }
        return true
    }

    /// A piece of the body. Past the limit the rest is discarded and 413 answered at the end;
    /// a client that sends more than twice the limit is disconnected.
    func bodyReceived(_ exchange: HTTPExchange, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let limit = exchange.bodyLimit
        if !exchange.overflowed && exchange.body.count + bytes.count > limit {
            exchange.overflowed = true
            exchange.discardedBytes = exchange.body.count
            exchange.body = Data()
        }
        if exchange.overflowed {
            exchange.discardedBytes += bytes.count
            if exchange.discardedBytes > 2 * limit {
                exchange.status = 413
                return false
            }
            return true
        }
        exchange.body.append(contentsOf: bytes)
        return true
    }

    /// The whole request arrived: suspends the connection and runs the handler in a task,
    /// which resumes the connection when it has answered.
    func requestReceived(_ exchange: HTTPExchange, on connection: OpaquePointer) -> Bool {
        if exchange.overflowed {
            return respond(exchange, ErrorBodies.tooLarge(limit: exchange.bodyLimit), on: connection)
        }
        guard case .found(let route) = router.match(method: exchange.method, path: exchange.path) else {
            return respond(exchange, ErrorBodies.response(404, "no such endpoint"), on: connection)
        }
        let id: Int? = state.withLock { state in
            guard state.phase == .running else { return nil }
            state.nextHandler += 1
            state.handlers[state.nextHandler] = .starting
            return state.nextHandler
        }
        guard let id else { return respond(exchange, ErrorBodies.unavailable(), on: connection) }
        let request = HTTPRequest(
            method: exchange.method, path: exchange.path, query: exchange.query, headers: exchange.headers,
            body: exchange.body)
        exchange.body = Data()
        exchange.phase = .handling
        deadlines.handlerStarted(key(connection))
        let slot = exchange.slot
        let suspended = MicroHTTPDConnection.suspend(connection)
        let task = Task { [self] in
            let response = await route.handler(request)
            slot.store(response)
            suspended.resume()
            // After the resume: a shutdown that sees no handler left may stop the daemon, which
            // must not find this connection still suspended.
            _ = state.withLock { $0.handlers.removeValue(forKey: id) }
        }
        state.withLock { state in
            if state.handlers[id] != nil { state.handlers[id] = .running(task) }
        }
        return true
    }

    /// Called again after the handler resumed the connection: sends its response.
    func handlerFinished(_ exchange: HTTPExchange, on connection: OpaquePointer) -> Bool {
        guard let response = exchange.slot.take() else { return true }
        return respond(exchange, response, on: connection)
    }

    private func respond(_ exchange: HTTPExchange, _ response: HTTPResponse, on connection: OpaquePointer) -> Bool {
        exchange.phase = .responded
        exchange.status = response.status
        exchange.logFields = response.logFields
        let closing = state.withLock { $0.phase != .running }
        deadlines.responseQueued(key(connection), bytes: response.body.count)
        return MicroHTTPDConnection.queue(response, on: connection, closing: closing, log: configuration.log)
    }

    func requestCompleted(_ exchange: HTTPExchange, on connection: OpaquePointer, delivered: Bool) {
        state.withLock { $0.liveExchanges -= 1 }
        deadlines.requestCompleted(key(connection))
        // A request cut off before its headers never reached a route: the watchdog logged it.
        guard exchange.phase != .headers else { return }
        let summary = HTTPRequestSummary(
            method: exchange.method, route: exchange.route, status: exchange.status ?? 0,
            duration: .now - exchange.started, delivered: delivered, logFields: exchange.logFields)
        configuration.log(summary.logLine)
        observer?(summary)
    }

    // MARK: Shutdown

    /// Starts draining; false if the server was draining or stopped already.
    func beginDraining() -> Bool {
        state.withLock { state in
            guard state.phase == .running else { return false }
            state.phase = .draining
            return true
        }
    }

    var runningHandlers: Int { state.withLock { $0.handlers.count } }
    var liveExchanges: Int { state.withLock { $0.liveExchanges } }

    func cancelHandlers() {
        let tasks = state.withLock { state in
            state.handlers.values.compactMap { handler -> Task<Void, Never>? in
                if case .running(let task) = handler { return task }
                return nil
            }
        }
        for task in tasks { task.cancel() }
    }

    func markStopped() {
        state.withLock { $0.phase = .stopped }
    }

    var isShuttingDown: Bool { state.withLock { $0.phase != .running } }
}
