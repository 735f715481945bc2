import RecordKeeperTestSupport
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing
@testable import RecordKeeper

/// OUTBOX.md contract 7 through the platform's own `URLSession` (FoundationNetworking on Linux,
/// Apple's on Apple platforms), with no server and no subprocess, so it also runs where there
/// are none (the iOS simulator of .github/workflows/apple.yml): a request cancelled with its
/// task is `URLError.cancelled` from the session, which the transport turns into a
/// cancellation, and the operation is due again at once.
@Suite(.serialized) struct HTTPTransportCancellationTests {
    @Test func `a request cancelled with its task throws CancellationError, not a failure to back off from`() async throws {
        let transport = HTTPOutboxTransport(endpoint: HoldingURLProtocol.endpoint, session: HoldingURLProtocol.session())
        let operation = OutboxOperation(
            id: UUID(), kind: "k", payload: Data("{}".utf8), orderingKey: nil, attempts: 1, createdAt: Date(),
            nextAttemptAt: Date(), lastError: nil)
        let events = HoldingURLProtocol.events()
        let delivery = Task { try await transport.deliver(operation) }
        #expect(try await firstElement(of: events, timeout: .seconds(30)) == "held \(operation.id.uuidString)")
        delivery.cancel()
        await #expect(throws: CancellationError.self) { try await delivery.value }
    }

    @Test func `a processor cancelled during a request leaves the operation due again at once`() async throws {
        let store = RecordStore.inMemory()
        let clock = TestClock()
        let transport = HTTPOutboxTransport(endpoint: HoldingURLProtocol.endpoint, session: HoldingURLProtocol.session())
        let processor = OutboxProcessor.testing(store, transport, clock: clock)
        let held = OutboxMessage(kind: "hold", payload: Data("{}".utf8), orderingKey: "cart/a")
        try await store.enqueue([held])
        let events = HoldingURLProtocol.events()
        let delivery = Task { try await processor.deliverDue() }
        #expect(try await firstElement(of: events, timeout: .seconds(30)) == "held \(held.id.uuidString)")
        delivery.cancel()
        await #expect(throws: CancellationError.self) { try await delivery.value }
        let pending = try #require(try await store.outbox.pending().first)
        #expect(pending.lastError == "the delivery was cancelled")
        #expect(pending.nextAttemptAt <= clock.now, "due again at once, not after a backoff")
    }
}

/// A URL protocol that holds every request until its task is cancelled, reporting "held ID"
/// (the `Idempotency-Key`) when it has one.
final class HoldingURLProtocol: URLProtocol {
    // Instances are driven by the session's own queue; the only shared state is `current`,
    // behind `Protected`.
    static let endpoint = URL(string: "http://held.invalid/operations")!
    private static let current = Protected<AsyncStream<String>.Continuation?>(nil)

    /// A session whose requests go to this protocol.
    static func session() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [HoldingURLProtocol.self]
        return URLSession(configuration: configuration)
    }

    /// The events of the requests from now on (the suite runs its tests one at a time).
    static func events() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        current.withLock { $0 = continuation }
        return stream
    }

    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let key = request.value(forHTTPHeaderField: "Idempotency-Key") ?? "?"
        _ = Self.current.withLock { $0?.yield("held \(key)") }
    }

    override func stopLoading() {}
}
