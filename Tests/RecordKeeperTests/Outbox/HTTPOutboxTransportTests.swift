// Subprocesses (Process, python3 or the built executables) exist on macOS and Linux only: these
// tests are not built for iOS, tvOS, watchOS or visionOS.
#if os(macOS) || os(Linux)

import TestHelpers
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing
@testable import RecordKeeper

/// The HTTP transport against a receiver on loopback that fails in every way it may.
@Suite struct HTTPOutboxTransportTests {
    @Test func `every operation is applied exactly once or dead-lettered through 500, 429, 401, 422 and a server that dies`() async throws {
        try await LoopbackReceiver.withRunning { receiver, directory in
            let store = RecordStore(url: directory.appendingPathComponent("records.sqlite"))
            let token = Protected("stale")
            let transport = HTTPOutboxTransport(endpoint: receiver.endpoint) {
                ["Authorization": "Bearer \(token.withLock { $0 })", "X-Client": "tests"]
            }
            let clock = TestClock()
            let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: RetryPolicy(maximumAttempts: 10))

            let plan: [(String, String?)] = [
                ("ok", "cart/a"), ("fail500", "cart/a"), ("ok", "cart/a"),
                ("throttle", "cart/b"), ("ok", "cart/b"),
                ("reject", "cart/c"), ("ok", "cart/c"),
                ("crash", "cart/d"), ("ok", "cart/d"),
                ("auth", nil), ("ok", nil), ("ok", nil),
            ]
            let messages = plan.enumerated().map { index, entry in
                OutboxMessage(kind: entry.0, payload: Data(#"{"n":\#(index)}"#.utf8), orderingKey: entry.1)
            }
            // The server's crash comes after the first round, whose answers the test checks.
            for message in messages where message.orderingKey != "cart/d" {
                try await store.apply("carts", changes: RecordChanges(upserts: [message.id.uuidString: Data()]), enqueue: [message])
            }

            let first = try await processor.deliverDue()
            #expect(first.deadLettered == 1)
            let throttled = try #require(try await store.outbox.pending().first { $0.kind == "throttle" })
            #expect(throttled.nextAttemptAt >= clock.now.addingTimeInterval(30), "Retry-After: 30 is honoured")
            #expect(throttled.lastError?.contains("HTTP 429") == true)
            token.withLock { $0 = "fresh" }
            for message in messages where message.orderingKey == "cart/d" {
                try await store.apply("carts", changes: RecordChanges(upserts: [message.id.uuidString: Data()]), enqueue: [message])
            }

            var rounds = 1
            while try await !store.outbox.pending().isEmpty, rounds < 30 {
                clock.advance(.seconds(60))
                try await processor.deliverDue()
                rounds += 1
            }
            #expect(try await store.outbox.pending().isEmpty, "delivered within \(rounds) rounds")
            let dead = try await store.outbox.deadLetters()
            #expect(dead.map(\.kind) == ["reject"])
            #expect(dead.first?.lastError?.contains("HTTP 422") == true)
            #expect(dead.first?.lastError?.contains("unknown sku") == true)

            let applied = try receiver.applied()
            let expected = messages.filter { $0.kind != "reject" }
            #expect(applied.count == expected.count, "each applied once: \(applied.map(\.kind))")
            #expect(Set(applied.map(\.key)) == Set(expected.map(\.id.uuidString)))
            #expect(try receiver.duplicates().contains(messages[7].id.uuidString), "the crashed request was sent again with its key")
            #expect(applied.allSatisfy { $0.type == "application/json" && $0.client == "tests" })
            let byKey = Dictionary(uniqueKeysWithValues: messages.map { ($0.id.uuidString, $0) })
            #expect(applied.allSatisfy { Data($0.body.utf8) == byKey[$0.key]?.payload })
            // Per ordering key, applied in enqueue order.
            for key in ["cart/a", "cart/b", "cart/d"] {
                let order = applied.filter { byKey[$0.key]?.orderingKey == key }.map(\.key)
                #expect(order == messages.filter { $0.orderingKey == key }.map(\.id.uuidString))
            }
            #expect(FileManager.default.fileExists(atPath: receiver.log.path + ".crashed"), "the server died mid-run and came back")
        }
    }

    @Test func `a request that timed out after the server applied it is sent again and deduped`() async throws {
        try await LoopbackReceiver.withRunning { receiver, _ in
            let store = RecordStore.inMemory()
            let configuration = URLSessionConfiguration.ephemeral
            // Whole seconds: on Linux, FoundationNetworking timed out at once with 0.5 s.
            configuration.timeoutIntervalForRequest = 1
            let session = URLSession(configuration: configuration)
            let transport = HTTPOutboxTransport(endpoint: receiver.endpoint, session: session, timeout: 1) { [:] }
            let clock = TestClock()
            let processor = OutboxProcessor.testing(store, transport, clock: clock)
            // The receiver applies it and then never answers, so the client's timeout always
            // comes after the receiver applied it, however slow the machine.
            let slow = OutboxMessage(kind: "slow", payload: Data("{}".utf8))
            try await store.enqueue([slow])
            #expect(try await processor.deliverDue().retried == 1, "the outcome of a timed-out request is unknown")
            try await receiver.waitFor("held \(slow.id.uuidString)")
            let pending = try #require(try await store.outbox.pending().first)
            let lastError = pending.lastError ?? ""
            #expect(lastError.contains("URLError \(URLError.timedOut.rawValue)"), "\(lastError)")
            #expect(lastError.contains("timed out: no answer within 1 s"), "says what happened in words: \(lastError)")
            #expect(!lastError.contains("NSURLErrorDomain"), "not Foundation's raw wording: \(lastError)")
            clock.advance(.seconds(2))
            let second = try await processor.deliverDue()
            let after = try await store.outbox.pending().first?.lastError
            #expect(second.delivered == 1, "\(second), \(after ?? "")")
            #expect(try receiver.applied().map(\.key) == [slow.id.uuidString], "applied once")
            #expect(try receiver.duplicates() == [slow.id.uuidString], "sent again with the same key")
        }
    }

    @Test func `408, 401 and 409 are retried, 408 not before its Retry-After, and every other 4xx is a dead letter`() async throws {
        try await LoopbackReceiver.withRunning { receiver, _ in
            let store = RecordStore.inMemory()
            let clock = TestClock()
            let processor = OutboxProcessor.testing(store, HTTPOutboxTransport(endpoint: receiver.endpoint), clock: clock)
            // 409: the Idempotency-Key draft's answer while an earlier request with the key is
            // still being processed (an abandoned or timed-out attempt): a dead letter would let
            // the operations behind it on its key go first.
            let retried = [408, 401, 409]
            let refused = [400, 403, 404, 405, 410, 413, 415, 422, 451]
            let messages = (retried + refused).map { OutboxMessage(kind: "status-\($0)", payload: Data("{}".utf8)) }
            try await store.enqueue(messages)
            let report = try await processor.deliverDue()
            #expect(report == OutboxDeliveryReport(delivered: 0, retried: retried.count, deadLettered: refused.count))

            let pending = Dictionary(uniqueKeysWithValues: try await store.outbox.pending().map { ($0.kind, $0) })
            #expect(Set(pending.keys) == Set(retried.map { "status-\($0)" }))
            let timeout = try #require(pending["status-408"])
            #expect(timeout.lastError?.hasPrefix("HTTP 408") == true, "\(timeout.lastError ?? "")")
            #expect(timeout.nextAttemptAt >= clock.now.addingTimeInterval(7), "Retry-After: 7 is honoured")
            #expect(pending["status-401"]?.lastError?.hasPrefix("HTTP 401") == true)
            let dead = try await store.outbox.deadLetters()
            #expect(Set(dead.map(\.kind)) == Set(refused.map { "status-\($0)" }))
            for letter in dead {
                let status = letter.kind.dropFirst(7)
                #expect(letter.lastError?.hasPrefix("HTTP \(status) from") == true, "\(letter.lastError ?? "")")
                #expect(letter.lastError?.contains("answered \(status)") == true, "the start of the body")
            }
        }
    }

    @Test func `a redirect is never followed and the operation stays pending, not counted delivered`() async throws {
        try await LoopbackReceiver.withRunning { receiver, _ in
            let store = RecordStore.inMemory()
            let transport = HTTPOutboxTransport(endpoint: receiver.endpoint) { ["Authorization": "Bearer secret"] }
            let processor = OutboxProcessor.testing(store, transport, clock: TestClock())
            let statuses = [301, 302, 303, 307, 308]
            try await store.enqueue(statuses.map { OutboxMessage(kind: "redirect-\($0)", payload: Data("{}".utf8)) })
            let report = try await processor.deliverDue()
            #expect(report == OutboxDeliveryReport(delivered: 0, retried: statuses.count, deadLettered: 0))
            #expect(try receiver.followedRedirects().isEmpty, "no request went to the redirect's target")
            let pending = try await store.outbox.pending()
            #expect(Set(pending.map(\.kind)) == Set(statuses.map { "redirect-\($0)" }))
            for operation in pending {
                let message = operation.lastError ?? ""
                #expect(message.contains("HTTP \(operation.kind.dropFirst(9)) redirects to /elsewhere"), "\(message)")
                #expect(message.contains("not followed"), "\(message)")
            }
            #expect(try receiver.applied().isEmpty)
        }
    }

    /// A session delegate of an app's that says nothing about redirects.
    final class AppDelegate: NSObject, URLSessionTaskDelegate, Sendable {}

    @Test func `through a session with a delegate of its own, an answer after a redirect is never taken as delivered`()
        async throws
    {
        try await LoopbackReceiver.withRunning { receiver, _ in
            let store = RecordStore.inMemory()
            let session = URLSession(configuration: .ephemeral, delegate: AppDelegate(), delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let transport = HTTPOutboxTransport(endpoint: receiver.endpoint, session: session)
            let processor = OutboxProcessor.testing(store, transport, clock: TestClock())
            try await store.enqueue([OutboxMessage(kind: "redirect-302", payload: Data("{}".utf8))])
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 0, retried: 1, deadLettered: 0))
            let message = try #require(try await store.outbox.pending().first?.lastError)
            // Apple platforms refuse it through the task's delegate; FoundationNetworking asks
            // the app's delegate, which follows it: the answer, another URL's, is refused.
            #expect(message.contains("HTTP 302 redirects to /elsewhere") || message.contains("followed a redirect"), "\(message)")
            #expect(try receiver.applied().isEmpty)
        }
    }

    @Test func `an answer is the server's when its URL names the same resource as the request's`() {
        func same(_ a: String, _ b: String) -> Bool { HTTPClientSupport.sameResource(URL(string: a)!, URL(string: b)!) }
        #expect(same("https://api.example.com/ops", "https://API.example.com/ops"))
        #expect(same("https://api.example.com", "https://api.example.com/"))
        #expect(same("https://api.example.com/ops?a=1", "https://api.example.com/ops?a=%31"))
        #expect(!same("https://api.example.com/ops", "https://api.example.com/login"))
        #expect(!same("https://api.example.com/ops", "https://portal.example.net/ops"))
        #expect(!same("https://api.example.com/ops", "http://api.example.com/ops"))
        #expect(!same("https://api.example.com:8443/ops", "https://api.example.com/ops"))
    }

    /// How a test stops delivery.
    enum Stopping: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case deliverDue, run
        var testDescription: String { "cancelling \(rawValue)()" }
    }

    @Test(
        .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
        arguments: Stopping.allCases)
    func `a request under way when delivery is cancelled is a failed attempt due again at once`(stopping: Stopping) async throws {
        try await LoopbackReceiver.withRunning { receiver, _ in
            let store = RecordStore.inMemory()
            let clock = TestClock()
            let processor = OutboxProcessor.testing(store, HTTPOutboxTransport(endpoint: receiver.endpoint), clock: clock)
            // The receiver holds the first request until the client goes away.
            let held = OutboxMessage(kind: "hold", payload: Data("{}".utf8), orderingKey: "cart/a")
            let behind = OutboxMessage(kind: "ok", payload: Data("{}".utf8), orderingKey: "cart/a")
            try await store.enqueue([held, behind])
            let delivery = Task {
                switch stopping {
                case .deliverDue: try await processor.deliverDue()
                case .run: try await processor.run()
                }
            }
            try await receiver.waitFor("held \(held.id.uuidString)")
            delivery.cancel()
            _ = try await withTimeLimit("the cancelled delivery") {
                await #expect(throws: CancellationError.self) { try await delivery.value }
            }
            try await receiver.waitFor("released \(held.id.uuidString)")  // the request itself was cancelled

            let pending = try await store.outbox.pending()
            #expect(pending.map(\.id) == [held.id, behind.id], "nothing lost, nothing more started")
            let first = try #require(pending.first)
            #expect(first.attempts == 1)
            #expect(first.lastError == "the delivery was cancelled")
            #expect(first.nextAttemptAt <= clock.now, "due again at once, not after a backoff")
            #expect(try receiver.applied().isEmpty)
            // Due now, and no longer claimed: another processor delivers both at once, in order,
            // without the clock moving.
            let transport = ScriptedTransport()
            #expect(try await OutboxProcessor.testing(store, transport, clock: clock).deliverDue().delivered == 2)
            #expect(transport.attempts.map(\.id) == [held.id, behind.id])
        }
    }

    @Test func `a server that is not there is an unreachable failure, not counted toward the dead letters`() async throws {
        let closed = try ClosedPort()
        let transport = HTTPOutboxTransport(endpoint: URL(string: "http://127.0.0.1:\(closed.port)/")!)
        let operation = OutboxOperation(
            id: UUID(), kind: "k", payload: Data(), orderingKey: nil, attempts: 1, createdAt: Date(),
            nextAttemptAt: Date(), lastError: nil)
        await #expect {
            try await transport.deliver(operation)
        } throws: { error in
            guard case OutboxDeliveryFailure.unreachable(let message) = error else { return false }
            return message.contains("URLError \(URLError.cannotConnectToHost.rawValue)")
                && message.contains("could not connect") && !message.contains("NSURLErrorDomain")
        }
        withExtendedLifetime(closed) {}
    }

    @Test(.disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
    func `a delivery ends within its deadline when the server holds it or the headers never come`() async throws {
        try await LoopbackReceiver.withRunning { receiver, _ in
            // The session would wait 60 s; the deadline (90 s in use, shortened here) comes first.
            let held = HTTPOutboxTransport(
                endpoint: receiver.endpoint, session: .shared, timeout: 60, deadline: .milliseconds(300)) { [:] }
            let operation = OutboxOperation(
                id: UUID(), kind: "hold", payload: Data("{}".utf8), orderingKey: nil, attempts: 1, createdAt: Date(),
                nextAttemptAt: Date(), lastError: nil)
            _ = try await withTimeLimit("a held delivery", timeout: .seconds(30)) {
                await #expect {
                    try await held.deliver(operation)
                } throws: { error in
                    guard case OutboxDeliveryFailure.retryable(let message, _) = error else { return false }
                    return message.contains("no answer within")
                }
            }
            // A token provider that never answers (and ignores cancellation) does not stall it either.
            let never = Gate()
            let stuck = HTTPOutboxTransport(
                endpoint: receiver.endpoint, session: .shared, timeout: 60, deadline: .milliseconds(300)
            ) { await never.wait(); return [:] }
            _ = try await withTimeLimit("a delivery whose headers never come", timeout: .seconds(30)) {
                await #expect(throws: OutboxDeliveryFailure.self) { try await stuck.deliver(operation) }
            }
            await never.open()
        }
    }

    @Test func `Retry-After is read as seconds or as an HTTP date`() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)  // Fri, 15 Jan 2027 08:00:00 GMT
        #expect(HTTPClientSupport.retryAfter("120", now: now) == .seconds(120))
        #expect(HTTPClientSupport.retryAfter("Fri, 15 Jan 2027 08:02:00 GMT", now: now) == .seconds(120))
        #expect(HTTPClientSupport.retryAfter("Fri, 15 Jan 2027 07:00:00 GMT", now: now) == .zero)
        #expect(HTTPClientSupport.retryAfter("soon", now: now) == nil)
    }

    @Test func `a Retry-After far in the future is taken for a day, never overflowing`() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for value in ["10000000000000000", "9223372036854775807", "Fri, 31 Dec 9999 23:59:59 GMT"] {
            #expect(HTTPClientSupport.retryAfter(value, now: now) == .seconds(86_400), "\(value)")
        }
        // Beyond Int: not a number of seconds, nor a date.
        #expect(HTTPClientSupport.retryAfter("99999999999999999999999", now: now) == nil)
    }
}

#endif
