import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Delivery: order per key, backoff with jitter, Retry-After, dead letters, claims and leases.
@Suite struct OutboxProcessorTests {
    @Test(arguments: StoreKind.allCases)
    func `due operations are delivered and removed only after the transport returned`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let sawPending = Protected(0)
            let transport = ScriptedTransport(hook: { operation in
                let pending = try? await store.outbox.pending()
                if pending?.contains(where: { $0.id == operation.id }) == true { sawPending.withLock { $0 += 1 } }
            })
            let processor = OutboxProcessor.testing(store, transport, clock: clock)
            try await store.enqueue((0..<5).map { message("a", "\($0)") })
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 5, retried: 0, deadLettered: 0))
            #expect(sawPending.withLock { $0 } == 5, "each operation was still stored while it was being delivered")
            #expect(transport.attempts.allSatisfy { $0.attempts == 1 })
            #expect(try await store.outbox.pending().isEmpty)
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 0, retried: 0, deadLettered: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `operations of one key are delivered in commit order under concurrent enqueue from many tasks`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        for number in 0..<15 {
                            let key = "key-\(number % 3)"
                            if number % 2 == 0 {
                                try await store.enqueue([message("op", "\(task)-\(number)", key: key)])
                            } else {
                                try await store.apply(
                                    "log", changes: RecordChanges(upserts: ["\(task)-\(number)": Data()]),
                                    enqueue: [message("op", "\(task)-\(number)", key: key), message("free", "\(task)-\(number)")])
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let committed = try await store.outbox.pending()
            let expectedCount = 8 * 15 + 8 * 7
            #expect(committed.count == expectedCount)
            let transport = ScriptedTransport()
            let report = try await OutboxProcessor.testing(store, transport, clock: TestClock()).deliverDue()
            #expect(report.delivered == committed.count)
            #expect(transport.overlaps == 0, "two operations of one key were delivered at the same time")
            for key in ["key-0", "key-1", "key-2"] {
                let expected = committed.filter { $0.orderingKey == key }.map(\.id)
                #expect(transport.attempts.filter { $0.orderingKey == key }.map(\.id) == expected)
                // Each task's own operations on the key are in the order the task enqueued them.
                for task in 0..<8 {
                    let numbers = transport.attempts
                        .filter { $0.orderingKey == key && String(decoding: $0.payload, as: UTF8.self).hasPrefix("\(task)-") }
                        .map { Int(String(decoding: $0.payload, as: UTF8.self).split(separator: "-")[1])! }
                    #expect(numbers == numbers.sorted())
                }
            }
        }
    }

    @Test func `a failure schedules the next attempt by exponential backoff with jitter, capped`() async throws {
        try await withStore(.inMemory) { store, _ in
            for (jitter, factor) in [(1.0, 1.0), (0.0, 0.5)] {
                let clock = TestClock()
                let failures = Array(repeating: ScriptedTransport.Answer.retry("503 busy", after: nil), count: 12)
                let transport = ScriptedTransport(["flaky": failures])
                let policy = RetryPolicy(initialDelay: .seconds(2), maximumDelay: .seconds(60), maximumAttempts: 50)
                let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: policy, jitter: jitter)
                let op = message("flaky", "x")
                try await store.enqueue([op])
                var delays: [Double] = []
                for attempt in 1...8 {
                    #expect(try await processor.deliverDue().retried == 1)
                    let pending = try #require(try await store.outbox.pending().first)
                    #expect(pending.attempts == attempt && pending.lastError == "503 busy")
                    let delay = pending.nextAttemptAt.timeIntervalSince(clock.now)
                    delays.append(delay)
                    // Not due a moment before; due at the scheduled time.
                    clock.advance(seconds: delay - 0.01)
                    #expect(try await processor.deliverDue().retried == 0)
                    clock.advance(seconds: 0.01)
                }
                let expected: [Double] = [2.0, 4, 8, 16, 32, 60, 60, 60].map { $0 * factor }
                let close = zip(delays, expected).allSatisfy { pair in abs(pair.0 - pair.1) < 0.002 }
                #expect(close, "\(delays) vs \(expected)")
                transport.answerEverythingForTesting()
                #expect(try await processor.deliverDue().delivered == 1)
            }
        }
    }

    @Test func `the default retry policy is 1 s doubling to at most 5 minutes, for 20 attempts`() {
        let policy = RetryPolicy()
        #expect(policy.initialDelay == .seconds(1))
        #expect(policy.maximumDelay == .seconds(300))
        #expect(policy.maximumAttempts == 20)
        let delays = (1...20).map { policy.delay(afterAttempts: $0) }
        #expect(Array(delays.prefix(9)) == [1, 2, 4, 8, 16, 32, 64, 128, 256].map { Duration.seconds($0) })
        #expect(delays.suffix(11).allSatisfy { $0 == .seconds(300) })
        // The processor's default is this policy.
        let processor = OutboxProcessor(store: .inMemory(), transport: ScriptedTransport())
        #expect(processor.retryPolicy.initialDelay == policy.initialDelay)
        #expect(processor.retryPolicy.maximumDelay == policy.maximumDelay)
        #expect(processor.retryPolicy.maximumAttempts == policy.maximumAttempts)
    }

    @Test func `jitter spreads the delay uniformly between half and all of it`() {
        let policy = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(300))
        let clock = TestClock()
        let seen = Protected<[ClosedRange<Double>]>([])
        let processor = OutboxProcessor(
            store: .inMemory(), transport: ScriptedTransport(), retryPolicy: policy, now: clock.read,
            lease: .seconds(60), random: { range in seen.withLock { $0.append(range) }; return range.lowerBound },
            sleep: { _ in })
        _ = processor.nextAttempt(after: 4, retryAfter: nil)
        _ = processor.nextAttempt(after: 30, retryAfter: nil)
        #expect(seen.withLock { $0 } == [4...8, 150...300])
    }

    @Test(arguments: StoreKind.allCases)
    func `a device offline for longer than the attempts allow dead-letters nothing, and its retries still back off`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let offline = Array(repeating: ScriptedTransport.Answer.offline("no network"), count: 6)
            let transport = ScriptedTransport(["op": offline + [.retry("503", after: nil), .retry("503", after: nil)]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: RetryPolicy(maximumAttempts: 2))
            let op = message("op", "x")
            try await store.enqueue([op])
            var delays: [TimeInterval] = []
            for _ in 0..<6 {
                #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 0, retried: 1, deadLettered: 0))
                let pending = try #require(try await store.outbox.pending().first)
                delays.append(pending.nextAttemptAt.timeIntervalSince(clock.now))
                clock.advance(.milliseconds(Int64((pending.nextAttemptAt.timeIntervalSince(clock.now) * 1000).rounded(.up))))
            }
            #expect(delays.map { $0.rounded() } == [1, 2, 4, 8, 16, 32], "backed off as any failure")
            let pending = try #require(try await store.outbox.pending().first)
            #expect(pending.attempts == 6)
            #expect(pending.unreachableAttempts == 6)
            #expect(pending.lastError == "no network")
            // Failures that reached the server count: the second one is the limit.
            #expect(try await processor.deliverDue().retried == 1)
            clock.advance(.seconds(3600))
            #expect(try await processor.deliverDue().deadLettered == 1)
            let dead = try #require(try await store.outbox.deadLetters().first)
            #expect(dead.lastError?.hasPrefix("2 attempts failed") == true, "\(dead.lastError ?? "")")
            // A requeue starts both counts again.
            try await store.outbox.requeue(op.id)
            let requeued = try #require(try await store.outbox.pending().first)
            #expect(requeued.attempts == 0 && requeued.unreachableAttempts == 0)
        }
    }

    @Test func `Retry-After is honoured when it is later than the backoff`() async throws {
        try await withStore(.inMemory) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport(["op": [.retry("429", after: .seconds(30)), .retry("429", after: .milliseconds(10))]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock)
            try await store.enqueue([message("op", "x")])
            try await processor.deliverDue()
            #expect(try await store.outbox.pending()[0].nextAttemptAt == clock.now.addingTimeInterval(30))
            clock.advance(.seconds(30))
            try await processor.deliverDue()
            // The backoff (2 s after the second attempt) is later than Retry-After here.
            #expect(try await store.outbox.pending()[0].nextAttemptAt == clock.now.addingTimeInterval(2))
        }
    }

    @Test func `a transport's Retry-After beyond a day is taken for a day, never trapping`() async throws {
        try await withStore(.inMemory) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport(["op": [.retry("503", after: .seconds(Int64.max))]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock)
            try await store.enqueue([message("op", "x")])
            try await processor.deliverDue()
            #expect(try await store.outbox.pending()[0].nextAttemptAt == clock.now.addingTimeInterval(86_400))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `operations behind a failing one on its key wait; other keys and unkeyed operations go on`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport(["stuck": [.retry("500", after: nil)], "poison": [.reject("422 bad item")]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock)
            let stuck = message("stuck", "1", key: "a"), behindStuck = message("ok", "2", key: "a")
            let poison = message("poison", "3", key: "b"), behindPoison = message("ok", "4", key: "b")
            let free = message("ok", "5")
            try await store.enqueue([stuck, behindStuck, poison, behindPoison, free])
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 2, retried: 1, deadLettered: 1))
            #expect(try await store.outbox.pending().map(\.id) == [stuck.id, behindStuck.id])
            #expect(try await store.outbox.deadLetters().map(\.id) == [poison.id])
            #expect(transport.attempts.map(\.id).contains(behindStuck.id) == false)
            clock.advance(.seconds(1))
            #expect(try await processor.deliverDue().delivered == 2)
            let order = transport.attempts.map(\.id)
            #expect(order.firstIndex(of: poison.id)! < order.firstIndex(of: behindPoison.id)!)
            #expect(order.lastIndex(of: stuck.id)! < order.firstIndex(of: behindStuck.id)!)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an operation due again at once is attempted once per call and still holds back its key`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport(["flaky": [.retry("503", after: nil)]])
            // No backoff: the failed operation is due again within the same call.
            let policy = RetryPolicy(initialDelay: .zero, maximumDelay: .zero)
            let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: policy)
            let flaky = message("flaky", "1", key: "a"), behind = message("ok", "2", key: "a")
            // More unkeyed operations than the processor delivers at a time.
            let others = (0..<(3 * OutboxProcessor.maximumConcurrentDeliveries)).map { message("ok", "other \($0)") }
            try await store.enqueue([flaky, behind] + others)
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: others.count, retried: 1))
            #expect(transport.attempts.filter { $0.id == flaky.id }.count == 1)
            #expect(!transport.attempts.contains { $0.id == behind.id })
            #expect(try await store.outbox.pending().map(\.id) == [flaky.id, behind.id])
            #expect(try await processor.deliverDue().delivered == 2)
            #expect(transport.attempts.suffix(2).map(\.id) == [flaky.id, behind.id])
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    @Test func `a retry policy that cannot work is refused before anything is claimed or delivered`() async throws {
        try await withStore(.inMemory) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport()
            try await store.enqueue([message("op", "x")])
            for (policy, named) in [
                (RetryPolicy(maximumAttempts: 0), "maximumAttempts is 0"),
                (RetryPolicy(initialDelay: .seconds(-1)), "initialDelay is -1.0 seconds"),
                (RetryPolicy(maximumDelay: .seconds(-5)), "maximumDelay is -5.0 seconds"),
            ] {
                let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: policy)
                for call in [
                    { _ = try await processor.deliverDue() },
                    { try await processor.run() },
                ] as [@Sendable () async throws -> Void] {
                    let error = await #expect(throws: RecordStoreError.self) { try await call() }
                    #expect(error?.code == .invalidArgument)
                    #expect(error?.detail?.contains(named) == true, "\(String(describing: error))")
                }
            }
            #expect(transport.attempts.isEmpty)
            #expect(try await store.outbox.pending().map(\.attempts) == [0], "nothing claimed, nothing dead-lettered")
        }
    }

    @Test func `a retryable failure at the last attempt moves the operation to the dead letters`() async throws {
        try await withStore(.inMemory) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport(["op": Array(repeating: .retry("timed out", after: nil), count: 3)])
            let policy = RetryPolicy(initialDelay: .seconds(1), maximumAttempts: 3)
            let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: policy)
            try await store.enqueue([message("op", "x", key: "k"), message("next", "y", key: "k")])
            #expect(try await processor.deliverDue().retried == 1)
            clock.advance(.seconds(10))
            #expect(try await processor.deliverDue().retried == 1)
            clock.advance(.seconds(10))
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 1, retried: 0, deadLettered: 1))
            let dead = try #require(try await store.outbox.deadLetters().first)
            #expect(dead.attempts == 3)
            #expect(dead.lastError?.contains("3 attempts failed") == true)
            #expect(dead.lastError?.contains("timed out") == true)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a claimed operation is not delivered by another processor until its lease ends`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let entered = Gate(), release = Gate()
            let hanging = ScriptedTransport(hook: { _ in
                await entered.open()
                await release.wait()
            })
            let first = OutboxProcessor.testing(store, hanging, clock: clock, policy: RetryPolicy(maximumAttempts: 2), lease: .seconds(60))
            let second = ScriptedTransport()
            let other = OutboxProcessor.testing(store, second, clock: clock, policy: RetryPolicy(maximumAttempts: 2), lease: .seconds(60))
            let op = message("op", "x", key: "k")
            try await store.enqueue([op, message("later", "y", key: "k")])
            let running = Task { try await first.deliverDue() }
            await entered.wait()
            #expect(try await other.deliverDue() == OutboxDeliveryReport(delivered: 0, retried: 0, deadLettered: 0))
            clock.advance(.seconds(59))
            #expect(try await other.deliverDue().delivered == 0)
            // The first processor is presumed dead: its lease is over.
            clock.advance(.seconds(1))
            #expect(try await other.deliverDue().delivered == 2)
            #expect(second.attempts.map(\.attempts) == [2, 1], "the attempt that never finished was counted")
            await release.open()
            // The late delivery finds its operation gone and leaves the outbox as it is.
            _ = try await running.value
            #expect(try await store.outbox.pending().isEmpty)
            #expect(try await store.outbox.deadLetters().isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a delivery that outlived its lease and succeeds removes the operation another attempt dead-lettered`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let entered = Gate(), release = Gate()
            let hanging = ScriptedTransport(hook: { _ in
                await entered.open()
                await release.wait()
            })
            let first = OutboxProcessor.testing(store, hanging, clock: clock, lease: .seconds(60))
            let refusing = ScriptedTransport(["op": [.reject("422 already applied")]])
            let other = OutboxProcessor.testing(store, refusing, clock: clock, lease: .seconds(60))
            let op = message("op", "x")
            try await store.enqueue([op])
            let running = Task { try await first.deliverDue() }
            await entered.wait()
            clock.advance(.seconds(60))
            #expect(try await other.deliverDue().deadLettered == 1)
            #expect(try await store.outbox.deadLetters().map(\.id) == [op.id])
            // The first delivery was applied after all: the server has it, so it must not wait in
            // the dead letters for someone to requeue (and send it again).
            await release.open()
            #expect(try await running.value.delivered == 1)
            #expect(try await store.outbox.deadLetters().isEmpty)
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    /// Store options whose event handler collects the operations reported dead-lettered.
    static func collectingDeadLetters() -> (RecordStore.Options, TestHelpers.Protected<[OutboxOperation]>) {
        let events = TestHelpers.Protected<[OutboxOperation]>([])
        let options = RecordStore.Options(eventHandler: { event in
            if case .outboxDeadLettered(let operation) = event { events.withLock { $0.append(operation) } }
        })
        return (options, events)
    }

    @Test(arguments: StoreKind.allCases)
    func `a refusal that comes after the claim ran out, for an operation delivered meanwhile, reports no dead letter`(
        kind: StoreKind
    ) async throws {
        let (options, events) = Self.collectingDeadLetters()
        try await withStore(kind, options: options) { store, _ in
            let clock = TestClock()
            let entered = Gate(), release = Gate()
            let late = ScriptedTransport(["op": [.reject("422 already applied")]], hook: { _ in
                await entered.open()
                await release.wait()
            })
            let first = OutboxProcessor.testing(store, late, clock: clock, lease: .seconds(60))
            let other = OutboxProcessor.testing(store, ScriptedTransport(), clock: clock, lease: .seconds(60))
            try await store.enqueue([message("op", "x")])
            let running = Task { try await first.deliverDue() }
            await entered.wait()
            clock.advance(.seconds(60))
            #expect(try await other.deliverDue().delivered == 1)
            await release.open()
            #expect(try await running.value == OutboxDeliveryReport(), "its late answer recorded nothing")
            #expect(events.withLock { $0 }.isEmpty, "nothing was moved to the dead letters")
            #expect(try await store.outbox.deadLetters().isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `every operation moved to the dead letters is reported to the event handler with its error`(
        kind: StoreKind
    ) async throws {
        let (options, events) = Self.collectingDeadLetters()
        try await withStore(kind, options: options) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport([
                "refused": [.reject("400 unknown sku")], "flaky": [.retry("503 busy", after: nil)],
            ])
            let policy = RetryPolicy(maximumAttempts: 1)
            let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: policy)
            let refused = message("refused", "a"), flaky = message("flaky", "b"), fine = message("fine", "c")
            try await store.enqueue([refused, flaky, fine])
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 1, retried: 0, deadLettered: 2))
            let reported = events.withLock { $0 }
            #expect(Set(reported.map(\.id)) == [refused.id, flaky.id])
            let byID = Dictionary(uniqueKeysWithValues: reported.map { ($0.id, $0) })
            #expect(byID[refused.id]?.lastError == "400 unknown sku")
            #expect(byID[flaky.id]?.lastError?.contains("503 busy") == true, "\(byID[flaky.id]?.lastError ?? "")")
            let dead = try await store.outbox.deadLetters()
            #expect(Dictionary(uniqueKeysWithValues: dead.map { ($0.id, $0.lastError) })
                == Dictionary(uniqueKeysWithValues: reported.map { ($0.id, $0.lastError) }), "what was reported is what was recorded")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a dead letter requeued while a later operation of its key is under way waits behind it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let entered = Gate(), release = Gate()
            let first = ScriptedTransport(["a": [.reject("400 bad")]], hook: { operation in
                guard operation.kind == "b" else { return }
                await entered.open()
                await release.wait()
            })
            let processor = OutboxProcessor.testing(store, first, clock: clock, lease: .seconds(60))
            let second = ScriptedTransport()
            let other = OutboxProcessor.testing(store, second, clock: clock, lease: .seconds(60))
            let a = message("a", "1", key: "k")
            try await store.enqueue([a, message("b", "2", key: "k"), message("c", "3", key: "k")])
            // "a" is refused for good, so "b" goes on; while "b" is under way, "a" is requeued.
            let running = Task { try await processor.deliverDue() }
            await entered.wait()
            try await store.outbox.requeue(a.id)
            #expect(try await other.deliverDue() == OutboxDeliveryReport(), "b is under way: nothing of its key starts")
            await release.open()
            _ = try await running.value
            // The first processor goes on in line with "c"; "a" comes behind it, as if enqueued again.
            _ = try await other.deliverDue()
            #expect(first.overlaps == 0 && second.overlaps == 0)
            #expect(first.attempts.map(\.kind) == ["a", "b", "c"])
            #expect(second.attempts.map(\.kind) == ["a"])
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    @Test func `an operation whose deliveries never finish reaches the dead letters`() async throws {
        try await withStore(.inMemory) { store, _ in
            let clock = TestClock()
            let policy = RetryPolicy(maximumAttempts: 2)
            try await store.enqueue([message("crashes", "x")])
            // Two processors in turn start a delivery that never ends (as if each process died
            // in it); each time the lease runs out.
            var stuck: [(Task<OutboxDeliveryReport, any Error>, Gate)] = []
            for _ in 0..<2 {
                let entered = Gate(), release = Gate()
                let hangs = ScriptedTransport(hook: { _ in
                    await entered.open()
                    await release.wait()
                })
                let processor = OutboxProcessor.testing(store, hangs, clock: clock, policy: policy, lease: .seconds(10))
                stuck.append((Task { try await processor.deliverDue() }, release))
                await entered.wait()
                clock.advance(.seconds(11))
            }
            let collector = OutboxProcessor.testing(store, ScriptedTransport(), clock: clock, policy: policy)
            #expect(try await collector.deliverDue() == OutboxDeliveryReport(delivered: 0, retried: 0, deadLettered: 1))
            let dead = try #require(try await store.outbox.deadLetters().first)
            #expect(dead.attempts == 2)
            #expect(dead.lastError?.contains("2 delivery attempts were started") == true)
            // A stuck delivery ends late, and the server took it after all: the operation is
            // delivered, so it leaves the dead letters (nobody should requeue and send it again).
            let (task, release) = stuck[0]
            await release.open()
            #expect(try await task.value.delivered == 1)
            #expect(try await store.outbox.deadLetters().isEmpty)
            #expect(try await store.outbox.pending().isEmpty)
            await stuck[1].1.open()
            _ = try await stuck[1].0.value
        }
    }
}

extension OutboxProcessorTests {
    @Test func `different ordering keys are delivered concurrently`() async throws {
        try await withStore(.inMemory) { store, _ in
            let otherStarted = Gate()
            // The delivery on key "a" returns only once the one on key "b" has started: run one
            // after the other, this would never finish.
            let transport = ScriptedTransport(hook: { operation in
                if operation.orderingKey == "a" { await otherStarted.wait() } else { await otherStarted.open() }
            })
            try await store.enqueue([message("op", "1", key: "a"), message("op", "2", key: "b")])
            #expect(try await OutboxProcessor.testing(store, transport, clock: TestClock()).deliverDue().delivered == 2)
        }
    }
}

extension OutboxProcessorTests {
    /// Counts deliveries per operation and notices two at the same time.
    final class CountingTransport: OutboxTransport {
        private let state = Protected<(inFlight: Set<UUID>, counts: [UUID: Int], overlaps: Int)>(([], [:], 0))
        var counts: [UUID: Int] { state.withLock { $0.counts } }
        var overlaps: Int { state.withLock { $0.overlaps } }

        func deliver(_ operation: OutboxOperation) async throws {
            state.withLock { state in
                if !state.inFlight.insert(operation.id).inserted { state.overlaps += 1 }
                state.counts[operation.id, default: 0] += 1
            }
            await Task.yield()
            state.withLock { _ = $0.inFlight.remove(operation.id) }
        }
    }

    @Test func `two processors on one file, in one process, deliver each operation once`() async throws {
        try await withStore(.onDisk) { store, url in
            let messages = (0..<200).map { message("op", "\($0)", key: $0 % 3 == 0 ? nil : "key-\($0 % 5)") }
            try await store.enqueue(messages)
            let transport = CountingTransport()
            let clock = TestClock()
            // Two connections to the file, as two parts of an app might have.
            let processors = [store, RecordStore(url: url)].map { OutboxProcessor.testing($0, transport, clock: clock) }
            let reports = try await withThrowingTaskGroup(of: OutboxDeliveryReport.self) { group in
                for processor in processors { group.addTask { try await processor.deliverDue() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(reports.map(\.delivered).reduce(0, +) == messages.count)
            #expect(transport.counts.count == messages.count)
            #expect(transport.counts.values.allSatisfy { $0 == 1 })
            #expect(transport.overlaps == 0)
            #expect(try await store.outbox.pending().isEmpty)
        }
    }
}
