import Foundation
import RecordKeeperRelay
import TestHelpers
import Testing

/// A graceful shutdown: requests being handled finish, new ones get 503, handlers past the
/// grace period are cancelled, and then the server stops listening.
@Suite(.timeLimit(.minutes(10))) struct HTTPServerShutdownTests {
    /// A route that holds its request until `gate` opens, or answers 503 when cancelled.
    private static func holding(_ gate: Gate, _ arrivals: Arrivals) -> HTTPRoute {
        HTTPRoute(.get, "/hold") { _ in
            await arrivals.arrive()
            await withTaskCancellationHandler {
                await gate.wait()
            } onCancel: {
                Task { await gate.open() }
            }
            if Task.isCancelled { return HTTPResponse(status: 503, text: "cancelled") }
            return HTTPResponse(status: 200, text: "held")
        }
    }

    private static let quick = HTTPRoute(.get, "/quick") { _ in HTTPResponse(status: 200, text: "quick") }

    @Test func `in-flight requests finish while new ones get 503, then the server stops listening`() async throws {
        let gate = Gate()
        let arrivals = Arrivals()
        var configuration = HTTPServer.Configuration()
        configuration.log = { _ in }
        configuration.relaxedForTests()
        let summaries = Protected<[HTTPRequestSummary]>([])
        let server = try HTTPServer(
            configuration: configuration, routes: [Self.holding(gate, arrivals), Self.quick],
            observer: { summary in summaries.withLock { $0.append(summary) } })
        let port = server.port
        let held = try await RawConnection.open(port: port)
        try await held.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        await arrivals.wait(for: 1)
        let kept = try await RawConnection.open(port: port)
        try await kept.send("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await kept.readResponse().status == 200)

        let shutdown = Task { await server.shutdown(gracePeriod: .seconds(120)) }
        try await waitUntil { server.isShuttingDown }
        // A new connection, and a connection kept alive from before: both 503, told to close.
        let fresh = try await RawConnection.open(port: port)
        try await fresh.send("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = try await fresh.readResponse()
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.headers["connection"]?.lowercased() == "close")
        try await kept.send("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await kept.readResponse().status == 503)
        #expect(server.statistics.handlers == 1, "the held request is still being handled")

        await gate.open()
        let finished = try await held.readResponse()
        #expect(finished.status == 200)
        #expect(String(decoding: finished.body, as: UTF8.self) == "held\n")
        await shutdown.value
        await #expect(throws: RawConnection.Failure.self) { _ = try await RawConnection.open(port: port) }
        // The 503s of the shutdown are logged and counted under their route, not "unmatched".
        let refusals = summaries.withLock { $0 }.filter { $0.status == 503 }
        #expect(refusals.count == 2)
        #expect(refusals.allSatisfy { $0.route == "/quick" }, "\(refusals.map(\.route))")
    }

    @Test func `handlers still running when the grace period ends are cancelled and answer`() async throws {
        let gate = Gate()
        let arrivals = Arrivals()
        var configuration = HTTPServer.Configuration()
        configuration.log = { _ in }
        configuration.relaxedForTests()
        let server = try HTTPServer(configuration: configuration, routes: [Self.holding(gate, arrivals)])
        let held = try await RawConnection.open(port: server.port)
        try await held.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        await arrivals.wait(for: 1)
        await server.shutdown(gracePeriod: .zero)
        let response = try await held.readResponse()
        #expect(response.status == 503)
        #expect(String(decoding: response.body, as: UTF8.self) == "cancelled\n")
    }

    @Test func `shutting down twice waits for the same shutdown`() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.log = { _ in }
        configuration.relaxedForTests()
        let server = try HTTPServer(configuration: configuration, routes: [Self.quick])
        async let first: Void = server.shutdown()
        async let second: Void = server.shutdown()
        _ = await (first, second)
        #expect(server.isShuttingDown)
    }
}
