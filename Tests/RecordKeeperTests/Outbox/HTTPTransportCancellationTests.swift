import TestHelpers
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
@Suite(
    .serialized,
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
struct HTTPTransportCancellationTests {
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

    #if canImport(FoundationNetworking)
        /// swift-corelibs-foundation can deadlock when a request is cancelled as its answer
        /// arrives (issue 5412; continuous sync hung on it), so on Linux a cancelled caller
        /// abandons its request instead: it returns at once and the request is never stopped.
        @Test func `on Linux a cancelled request is abandoned: the caller returns at once and the request runs on`()
            async throws
        {
            let transport = HTTPOutboxTransport(endpoint: HoldingURLProtocol.endpoint, session: HoldingURLProtocol.session())
            let operation = OutboxOperation(
                id: UUID(), kind: "k", payload: Data("{}".utf8), orderingKey: nil, attempts: 1, createdAt: Date(),
                nextAttemptAt: Date(), lastError: nil)
            let key = operation.id.uuidString
            let events = HoldingURLProtocol.events()
            let delivery = Task { try await transport.deliver(operation) }
            #expect(try await firstElement(of: events, timeout: .seconds(30)) == "held \(key)")
            delivery.cancel()
            await #expect(throws: CancellationError.self) { try await delivery.value }
            // Its answer still arrives and ends it; a stopped request would have said so first.
            #expect(HoldingURLProtocol.answer(key))
            #expect(try await firstElement(of: events, timeout: .seconds(30)) == "answered \(key)")
        }
    #endif

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

/// A URL protocol that holds every request until its task is cancelled or the test answers it,
/// reporting "held ID" (the `Idempotency-Key`), "stopped ID" when it is stopped, and
/// "answered ID" when ``answer(_:)`` ended it.
///
/// Instances are driven by the session's own queue; the shared state (`current`, `held`) is
/// behind `Protected`.
final class HoldingURLProtocol: URLProtocol {
    static let endpoint = URL(string: "http://held.invalid/operations")!
    private static let current = Protected<AsyncStream<String>.Continuation?>(nil)
    private static let held = Protected<[String: Held]>([:])

    /// A held instance, handed from the session's queue to ``answer(_:)``.
    ///
    /// `@unchecked Sendable`: `URLProtocol` is not `Sendable`; the instance is only used to
    /// call its `client`, which URLSession lets a protocol call from any thread, once it has
    /// been taken out of `held` (so by one caller).
    private final class Held: @unchecked Sendable {
        let instance: HoldingURLProtocol
        init(_ instance: HoldingURLProtocol) { self.instance = instance }
    }

    /// Answers the held request `key` with an empty 200 and reports "answered KEY"; false when
    /// no such request is held.
    static func answer(_ key: String) -> Bool {
        guard let instance = held.withLock({ $0.removeValue(forKey: key) })?.instance, let url = instance.request.url,
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])
        else { return false }
        instance.client?.urlProtocol(instance, didReceive: response, cacheStoragePolicy: .notAllowed)
        instance.client?.urlProtocol(instance, didLoad: Data())
        instance.client?.urlProtocolDidFinishLoading(instance)
        _ = current.withLock { $0?.yield("answered \(key)") }
        return true
    }

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
        Self.held.withLock { $0[key] = Held(self) }
        _ = Self.current.withLock { $0?.yield("held \(key)") }
    }

    override func stopLoading() {
        let key = request.value(forHTTPHeaderField: "Idempotency-Key") ?? "?"
        guard Self.held.withLock({ $0.removeValue(forKey: key) }) != nil else { return }
        _ = Self.current.withLock { $0?.yield("stopped \(key)") }
    }
}
