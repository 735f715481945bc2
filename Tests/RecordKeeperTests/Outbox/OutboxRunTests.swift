import RecordKeeperTestSupport
import Foundation
import Testing
@testable import RecordKeeper

/// `run()`: retries come at their due time without new writes, an enqueue commit wakes it,
/// cancellation stops it leaving undelivered operations pending. No test sleeps: run()'s
/// sleeps go through a hook that moves the test clock, or waits until cancelled.
@Suite struct OutboxRunTests {
    /// A sleep hook: short sleeps move the clock at once; the idle sleep (nothing is due)
    /// reports itself and lasts until it is cancelled (by a wake-up or by the test).
    struct Sleeper {
        let clock: TestClock
        let idle: AsyncStream<Void>
        private let idleContinuation: AsyncStream<Void>.Continuation
        let requested = Protected<[Duration]>([])

        init(clock: TestClock) {
            self.clock = clock
            (idle, idleContinuation) = AsyncStream<Void>.makeStream()
        }

        var hook: @Sendable (Duration) async throws -> Void {
            { [clock, idleContinuation, requested] duration in
                requested.withLock { $0.append(duration) }
                if duration >= OutboxProcessor.idleInterval {
                    idleContinuation.yield()
                    try await Task.sleep(for: .seconds(86_400))
                } else {
                    clock.advance(duration)
                }
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `retries are made when due without waiting for a new write`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let sleeper = Sleeper(clock: clock)
            let transport = ScriptedTransport(["op": [.retry("500", after: nil), .retry("500", after: nil)]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock, sleep: sleeper.hook)
            try await store.enqueue([message("op", "x")])
            let run = Task { try await processor.run() }
            var idle = sleeper.idle.makeAsyncIterator()
            _ = await idle.next()  // everything delivered: run() waits for work
            #expect(try await store.outbox.pending().isEmpty)
            #expect(transport.attempts.map(\.attempts) == [1, 2, 3])
            #expect(sleeper.requested.withLock { $0 } .prefix(2) == [.seconds(1), .seconds(2)])
            run.cancel()
            await #expect(throws: CancellationError.self) { try await run.value }
        }
    }

    @Test func `operations waiting behind a failed one on their key do not make run spin`() async throws {
        try await withStore(.inMemory) { store, _ in
            let clock = TestClock()
            let sleeper = Sleeper(clock: clock)
            let transport = ScriptedTransport(["first": [.retry("503", after: .seconds(5))]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock, sleep: sleeper.hook)
            let first = message("first", "1", key: "k"), second = message("second", "2", key: "k")
            try await store.enqueue([first, second])
            let run = Task { try await processor.run() }
            var idle = sleeper.idle.makeAsyncIterator()
            _ = await idle.next()
            // It slept until the failed one was due (the overdue one behind it does not count).
            #expect(sleeper.requested.withLock { $0 }.first == .seconds(5))
            #expect(transport.attempts.map(\.id) == [first.id, first.id, second.id])
            run.cancel()
            await #expect(throws: CancellationError.self) { try await run.value }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an enqueue commit wakes a waiting run at once`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let sleeper = Sleeper(clock: clock)
            let transport = ScriptedTransport()
            let processor = OutboxProcessor.testing(store, transport, clock: clock, sleep: sleeper.hook)
            let run = Task { try await processor.run() }
            var idle = sleeper.idle.makeAsyncIterator()
            _ = await idle.next()
            let first = message("op", "1")
            try await store.enqueue([first])
            _ = await idle.next()
            #expect(transport.attempts.map(\.id) == [first.id])
            let second = message("op", "2")
            try await store.apply("c", changes: RecordChanges(upserts: ["k": Data()]), enqueue: [second])
            _ = await idle.next()
            #expect(transport.attempts.map(\.id) == [first.id, second.id])
            // A write without an enqueue does not wake it: the store's signal, run()'s only
            // wake-up besides its sleep (which the test holds), does not move.
            let signal = store.core.outboxSignal
            let generation = signal.generation
            let rounds = sleeper.requested.withLock { $0.count }
            try await store.put("c", key: "other", data: Data())
            #expect(signal.generation == generation, "a write without an enqueue woke the processors")
            // The next enqueue wakes it for exactly one more round.
            let third = message("op", "3")
            try await store.enqueue([third])
            _ = await idle.next()
            #expect(sleeper.requested.withLock { $0.count } == rounds + 1)
            #expect(transport.attempts.map(\.id) == [first.id, second.id, third.id])
            #expect(sleeper.requested.withLock { $0 }.allSatisfy { $0 == OutboxProcessor.idleInterval })
            #expect(try await store.outbox.pending().isEmpty)
            run.cancel()
            await #expect(throws: CancellationError.self) { try await run.value }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `cancellation stops run and leaves undelivered operations pending`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let entered = Gate()
            let hanging = ScriptedTransport(hook: { _ in
                await entered.open()
                try await Task.sleep(for: .seconds(86_400))
            })
            let processor = OutboxProcessor.testing(store, hanging, clock: clock, sleep: Sleeper(clock: clock).hook)
            let ops = [message("op", "1", key: "k"), message("op", "2", key: "k")]
            try await store.enqueue(ops)
            let run = Task { try await processor.run() }
            await entered.wait()
            run.cancel()
            await #expect(throws: CancellationError.self) { try await run.value }
            let pending = try await store.outbox.pending()
            #expect(pending.map(\.id) == ops.map(\.id))
            #expect(pending[0].attempts == 1 && pending[0].lastError == "the delivery was cancelled")
            // The claim was released: another processor delivers both now, in order.
            let transport = ScriptedTransport()
            #expect(try await OutboxProcessor.testing(store, transport, clock: clock).deliverDue().delivered == 2)
            #expect(transport.attempts.map(\.id) == ops.map(\.id))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `cancelling deliverDue starts nothing new and leaves the deliveries under way due again at once`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let started = Counter()
            let hanging = ScriptedTransport(hook: { _ in
                started.increment()
                try await Task.sleep(for: .seconds(86_400))
            })
            let processor = OutboxProcessor.testing(store, hanging, clock: clock)
            // One more unkeyed operation than deliveries may run at once.
            let ops = (0...OutboxProcessor.maximumConcurrentDeliveries).map { message("op", "\($0)") }
            try await store.enqueue(ops)
            let delivery = Task { try await processor.deliverDue() }
            try await waitUntil("every delivery slot is taken") { started.count == OutboxProcessor.maximumConcurrentDeliveries }
            delivery.cancel()
            await #expect(throws: CancellationError.self) { try await delivery.value }
            #expect(hanging.attempts.count == OutboxProcessor.maximumConcurrentDeliveries, "nothing new started")
            let pending = try await store.outbox.pending()
            #expect(Set(pending.map(\.id)) == Set(ops.map(\.id)))
            let cancelled = pending.filter { $0.attempts == 1 }
            #expect(cancelled.count == OutboxProcessor.maximumConcurrentDeliveries)
            #expect(cancelled.allSatisfy { $0.lastError == "the delivery was cancelled" && $0.nextAttemptAt <= clock.now })
            // Another processor delivers them all now, the clock unmoved.
            #expect(try await OutboxProcessor.testing(store, ScriptedTransport(), clock: clock).deliverDue().delivered == ops.count)
        }
    }
}
