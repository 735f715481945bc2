import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

/// `run()`: retries come at their due time without new writes, an enqueue commit wakes it,
/// cancellation stops it leaving undelivered operations pending. No test sleeps: run()'s
/// sleeps go through a hook that moves the test clock, or waits until cancelled.
@Suite(.disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
struct OutboxRunTests {
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

    /// A sleep hook whose idle sleeps last until the test lets them pass (``elapse()``), which
    /// then moves the clock by the whole duration: the idle interval passing, without waiting.
    struct IntervalSleeper {
        let clock: TestClock
        let idle: AsyncStream<Void>
        private let idleContinuation: AsyncStream<Void>.Continuation
        let requested = Protected<[Duration]>([])
        /// The gate of each idle sleep by number, and how many sleeps (and elapses) there were.
        private let intervals = Protected<(gates: [Int: Gate], sleeps: Int, elapsed: Int)>(([:], 0, 0))

        init(clock: TestClock) {
            self.clock = clock
            (idle, idleContinuation) = AsyncStream<Void>.makeStream()
        }

        private static func gate(_ number: Int, in state: inout (gates: [Int: Gate], sleeps: Int, elapsed: Int)) -> Gate {
            if let gate = state.gates[number] { return gate }
            let gate = Gate()
            state.gates[number] = gate
            return gate
        }

        /// Lets the next idle sleep (under way or to come) come to its end.
        func elapse() async {
            let gate = intervals.withLock { state in
                defer { state.elapsed += 1 }
                return Self.gate(state.elapsed, in: &state)
            }
            await gate.open()
        }

        var hook: @Sendable (Duration) async throws -> Void {
            { [clock, idleContinuation, requested, intervals] duration in
                requested.withLock { $0.append(duration) }
                guard duration >= OutboxProcessor.idleInterval else { return clock.advance(duration) }
                let gate = intervals.withLock { state in
                    defer { state.sleeps += 1 }
                    return Self.gate(state.sleeps, in: &state)
                }
                idleContinuation.yield()
                try await gate.waitUnlessCancelled()
                clock.advance(duration)
            }
        }
    }

    @Test func `run notices within the idle interval what another process enqueued`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "created", data: Data())
            // Another process: its commits reach the file but never this store's signal.
            let otherProcess = RecordStore(url: url)
            let clock = TestClock()
            let sleeper = IntervalSleeper(clock: clock)
            let transport = ScriptedTransport()
            let processor = OutboxProcessor.testing(store, transport, clock: clock, sleep: sleeper.hook)
            let run = Task { try await processor.run() }
            var idle = sleeper.idle.makeAsyncIterator()
            _ = await idle.next()  // nothing to do: run() sleeps, at most the idle interval
            let op = message("op", "from elsewhere")
            try await otherProcess.enqueue([op])
            #expect(transport.attempts.isEmpty, "an enqueue elsewhere woke run() (it cannot: test broken?)")
            await sleeper.elapse()  // the interval passes
            _ = await idle.next()  // run() looked again, delivered, and sleeps again
            #expect(transport.attempts.map(\.id) == [op.id])
            #expect(try await store.outbox.pending().isEmpty)
            #expect(OutboxProcessor.idleInterval == .seconds(60))
            #expect(sleeper.requested.withLock { $0 } == [OutboxProcessor.idleInterval, OutboxProcessor.idleInterval])
            run.cancel()
            await #expect(throws: CancellationError.self) { try await run.value }
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

    @Test(.timeLimit(.minutes(2)), arguments: StoreKind.allCases)
    func `a round the store fails is reported and tried again, and run goes on delivering`(kind: StoreKind) async throws {
        let events = Protected<[RecordStoreEvent]>([])
        let options = RecordStore.Options(eventHandler: { event in events.withLock { $0.append(event) } })
        try await withStore(kind, options: options) { store, _ in
            let clock = TestClock()
            let sleeper = Sleeper(clock: clock)
            let transport = ScriptedTransport()
            let processor = OutboxProcessor.testing(store, transport, clock: clock, sleep: sleeper.hook)
            try await store.enqueue([message("op", "x")])
            // The round's first write (claiming the operation) fails.
            try await store.failNextCommitForTesting()
            let run = Task { try await processor.run() }
            var idle = sleeper.idle.makeAsyncIterator()
            _ = await idle.next()  // delivered after all: run() waits for work
            #expect(try await store.outbox.pending().isEmpty)
            #expect(transport.attempts.map(\.kind) == ["op"])
            let failures = events.withLock { $0 }.compactMap { event -> RecordStoreError? in
                if case .outboxRoundFailed(let error) = event { error } else { nil }
            }
            #expect(failures.map(\.code) == [.injectedFailure])
            #expect(sleeper.requested.withLock { $0 }.first == .seconds(1), "the retry after a failed round")
            run.cancel()
            await #expect(throws: CancellationError.self) { try await run.value }
        }
        #expect(OutboxProcessor.storeRetryDelay(afterFailures: 1) == .seconds(1))
        #expect(OutboxProcessor.storeRetryDelay(afterFailures: 3) == .seconds(4))
        #expect(OutboxProcessor.storeRetryDelay(afterFailures: 40) == OutboxProcessor.idleInterval)
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
            let signal = store.outboxSignal
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
