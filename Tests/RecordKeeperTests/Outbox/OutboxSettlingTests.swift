import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// One transaction records the deliveries that ended together and claims the next operations
/// (`OutboxProcessor.settle`): each outcome is written as it would be alone.
@Suite struct OutboxSettlingTests {
    @Test(arguments: StoreKind.allCases)
    func `a failure in the middle of a batch is retried with backoff, the ones before and after it are recorded, a running one is left claimed`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let processor = OutboxProcessor.testing(store, ScriptedTransport(), clock: clock)
            let ops = (0..<4).map { message("op", "\($0)") }
            try await store.enqueue(ops)
            var report = OutboxDeliveryReport()
            let claimed = try await processor.settle([], claiming: 4, due: clock.now, excluding: [], report: &report)
            #expect(claimed.map(\.id) == ops.map(\.id))
            #expect(claimed.allSatisfy { $0.attempts == 1 })
            // The first three ended, the second with a failure; the fourth is still running.
            let ended: [(OutboxOperation, (any Error)?)] = [
                (claimed[0], nil), (claimed[1], OutboxDeliveryFailure.retryable("503 busy")), (claimed[2], nil),
            ]
            let next = try await processor.settle(ended, claiming: 0, due: clock.now, excluding: [], report: &report)
            #expect(next.isEmpty)
            #expect(report == OutboxDeliveryReport(delivered: 2, retried: 1, deadLettered: 0))
            let pending = try await store.outbox.pending()
            #expect(pending.map(\.id) == [ops[1].id, ops[3].id])
            #expect(pending[0].attempts == 1 && pending[0].lastError == "503 busy")
            #expect(pending[0].nextAttemptAt == clock.now.addingTimeInterval(1), "the first backoff, 1 s")
            #expect(pending[1].attempts == 1 && pending[1].lastError == nil && pending[1].nextAttemptAt == pending[1].createdAt)
            // The running one is still claimed: another processor leaves it alone, and the failed
            // one is not due yet.
            let other = ScriptedTransport()
            #expect(try await OutboxProcessor.testing(store, other, clock: clock).deliverDue().delivered == 0)
            clock.advance(.seconds(1))
            #expect(try await OutboxProcessor.testing(store, other, clock: clock).deliverDue().delivered == 1)
            #expect(other.attempts.map(\.id) == [ops[1].id])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `claims in the same transaction see its outcomes: a delivered head lets the next of its key through`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let processor = OutboxProcessor.testing(store, ScriptedTransport(), clock: clock, policy: RetryPolicy(maximumAttempts: 1))
            let head = message("op", "1", key: "k"), behind = message("op", "2", key: "k")
            let rejected = message("op", "3", key: "j"), afterRejected = message("op", "4", key: "j")
            try await store.enqueue([head, behind, rejected, afterRejected])
            var report = OutboxDeliveryReport()
            let first = try await processor.settle([], claiming: 4, due: clock.now, excluding: [], report: &report)
            #expect(first.map(\.id) == [head.id, rejected.id], "one operation per key")
            let ended: [(OutboxOperation, (any Error)?)] = [(first[0], nil), (first[1], OutboxDeliveryFailure.permanent("422"))]
            let second = try await processor.settle(
                ended, claiming: 4, due: clock.now, excluding: Set(first.map(\.id)), report: &report)
            #expect(second.map(\.id) == [behind.id, afterRejected.id])
            #expect(report == OutboxDeliveryReport(delivered: 1, retried: 0, deadLettered: 1))
            #expect(try await store.outbox.deadLetters().map(\.id) == [rejected.id])
            #expect(try await store.outbox.pending().map(\.id) == [behind.id, afterRejected.id])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a backlog larger than a batch is delivered whole, in order per key`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let messages = (0..<300).map { message("op", "\($0)", key: $0 % 3 == 0 ? nil : "key-\($0 % 7)") }
            try await store.enqueue(messages)
            let transport = ScriptedTransport(["op": [.deliver, .retry("once", after: nil)]])
            let clock = TestClock()
            let processor = OutboxProcessor.testing(store, transport, clock: clock)
            let report = try await processor.deliverDue()
            #expect(report.retried == 1 && report.deadLettered == 0)
            // What waits: the retried operation and, if it has a key, the rest of its key.
            let waiting = try await store.outbox.pending()
            #expect(report.delivered + waiting.count == messages.count)
            let retried = try #require(waiting.first)
            #expect(retried.attempts == 1 && retried.lastError == "once")
            #expect(waiting.allSatisfy { $0.orderingKey == retried.orderingKey && ($0.orderingKey != nil || $0.id == retried.id) })
            clock.advance(.seconds(1))
            #expect(try await processor.deliverDue().delivered == waiting.count)
            #expect(transport.overlaps == 0)
            #expect(try await store.outbox.pending().isEmpty)
            for key in (0..<7).map({ "key-\($0)" }) {
                let expected = messages.filter { $0.orderingKey == key }.map(\.id)
                let delivered = transport.attempts.filter { $0.orderingKey == key }.map(\.id)
                // Without repeats of the retried one, the order of the key's deliveries.
                #expect(delivered.reduce(into: [UUID]()) { if $0.last != $1 { $0.append($1) } } == expected)
            }
        }
    }
}
