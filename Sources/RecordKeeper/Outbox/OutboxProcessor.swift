public import Foundation

/// Delivers a store's outbox operations through a transport: due operations in order per
/// ordering key, failed ones again later with exponential backoff, hopeless ones to the dead
/// letters.
///
/// ```swift
/// let processor = OutboxProcessor(store: store, transport: HTTPOutboxTransport(endpoint: url))
/// let delivery = Task { try await processor.run() }   // until cancelled
/// ```
///
/// Several processors, in one process or in several, may work on one store file: a processor
/// claims an operation in the database before delivering it, with a lease (see
/// ``leaseDuration``), so no two deliver the same operation at the same time, and an operation
/// claimed by a process that died is delivered again once the lease has run out. Leases and
/// schedules use the processor's `now` clock.
///
/// Delivery is at least once: the receiver dedupes by ``OutboxOperation/id``.
public actor OutboxProcessor {
    /// The store whose outbox this processor delivers.
    public nonisolated let store: RecordStore
    let transport: any OutboxTransport
    /// The retry schedule.
    public nonisolated let retryPolicy: RetryPolicy
    let now: @Sendable () -> Date
    /// How long a claim protects an operation being delivered (2 minutes). A delivery must end
    /// well before: ``HTTPOutboxTransport`` times out requests after 60 seconds.
    public static let leaseDuration: Duration = .seconds(120)
    /// How long ``run()`` sleeps at most when nothing is due, to notice operations that another
    /// process enqueued (commits on this store wake it at once).
    public static let idleInterval: Duration = .seconds(60)
    /// Deliveries under way at the same time, at most (on different ordering keys).
    static let maximumConcurrentDeliveries = 4

    let lease: Duration
    /// A random number in the given range (the jitter); injectable for tests.
    let random: @Sendable (ClosedRange<Double>) -> Double
    /// Sleeps for a duration (run()'s wait for the next due time); injectable for tests.
    let sleep: @Sendable (Duration) async throws -> Void
    /// This processor's name in claims.
    let identity = UUID().uuidString

    /// Creates a processor. It does nothing until ``deliverDue()`` or ``run()``.
    public init(
        store: RecordStore, transport: any OutboxTransport, retryPolicy: RetryPolicy = RetryPolicy(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            store: store, transport: transport, retryPolicy: retryPolicy, now: now, lease: Self.leaseDuration,
            random: { Double.random(in: $0) }, sleep: { try await Task.sleep(for: $0) })
    }

    /// The full initializer, with the seams tests use.
    init(
        store: RecordStore, transport: any OutboxTransport, retryPolicy: RetryPolicy,
        now: @escaping @Sendable () -> Date, lease: Duration,
        random: @escaping @Sendable (ClosedRange<Double>) -> Double,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.store = store
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.now = now
        self.lease = lease
        self.random = random
        self.sleep = sleep
    }

    // MARK: Delivering

    /// Delivers every operation due at `now()`: per ordering key strictly in enqueue order,
    /// operations without a key independently, a few at a time on different keys.
    ///
    /// An operation is removed only after the transport returned. A failure schedules the
    /// next attempt (operations behind it on its key wait), or moves the operation to the
    /// dead letters when it is permanent or the attempts are used up; then its key goes on.
    /// Each operation is attempted at most once per call.
    ///
    /// - Throws: a ``RecordStoreError`` when the store fails (operations then stay pending and
    ///   claimed ones are delivered again after their lease), or `CancellationError`.
    @discardableResult
    public func deliverDue() async throws -> OutboxDeliveryReport {
        let due = now()
        var report = OutboxDeliveryReport()
        var attempted = Set<UUID>()
        try await withThrowingTaskGroup(of: (OutboxOperation, (any Error)?).self) { group in
            var running = 0
            while true {
                let free = Self.maximumConcurrentDeliveries - running
                // Once cancelled, start nothing new but record the outcome of what is under way.
                let started =
                    free > 0 && !Task.isCancelled
                    ? try await claim(due: due, limit: free, excluding: attempted, report: &report) : []
                for operation in started {
                    attempted.insert(operation.id)
                    running += 1
                    let transport = transport
                    group.addTask {
                        do {
                            try await transport.deliver(operation)
                            return (operation, nil)
                        } catch {
                            return (operation, error)
                        }
                    }
                }
                guard let (operation, failure) = try await group.next() else { break }
                running -= 1
                try await finish(operation, failure: failure, report: &report)
            }
        }
        try Task.checkCancellation()
        return report
    }

    /// Claims up to `limit` deliverable operations in one transaction, counting an attempt for
    /// each. Operations that already used up their attempts (a delivery that never finished)
    /// go to the dead letters instead.
    private func claim(
        due: Date, limit: Int, excluding attempted: Set<UUID>, report: inout OutboxDeliveryReport
    ) async throws -> [OutboxOperation] {
        let now = now()
        let until = now.addingTimeInterval(lease.seconds)
        let identity = identity
        let maximumAttempts = retryPolicy.maximumAttempts
        let (claimed, buried) = try await store.performWrite(.outboxClaim, collection: nil) {
            context -> ([OutboxOperation], Int) in
            let outbox = OutboxEngine(engine: context.engine)
            var claimed: [OutboxOperation] = []
            var buried = 0
            // Dead-lettering one may let the next of its key through: look again until stable.
            while claimed.count < limit {
                let taken = claimed
                let candidates = try outbox.deliverable(due: due, now: now, limit: limit - claimed.count) { id in
                    attempted.contains(id) || taken.contains { $0.id == id }
                }
                var buriedNow = false
                for candidate in candidates {
                    if candidate.attempts >= maximumAttempts {
                        let previous = candidate.lastError.map { "; last error: \($0)" } ?? ""
                        try outbox.bury(
                            candidate.id,
                            error: "\(candidate.attempts) delivery attempts were started and none succeeded\(previous)")
                        buried += 1
                        buriedNow = true
                    } else {
                        try outbox.claim(candidate.id, processor: identity, until: until)
                        claimed.append(candidate)
                    }
                }
                if !buriedNow { break }
            }
            return (claimed, buried)
        }
        report.deadLettered += buried
        return claimed.map {
            OutboxOperation(
                id: $0.id, kind: $0.kind, payload: $0.payload, orderingKey: $0.orderingKey,
                attempts: $0.attempts + 1, createdAt: $0.createdAt, nextAttemptAt: $0.nextAttemptAt,
                lastError: $0.lastError)
        }
    }

    /// Records the outcome of one delivery in its own transaction.
    private func finish(_ operation: OutboxOperation, failure: (any Error)?, report: inout OutboxDeliveryReport) async throws {
        guard let failure else {
            try await record(.outboxDelivered) { try $0.remove(operation.id) }
            report.delivered += 1
            return
        }
        let description: String
        var next: Date?
        switch failure {
        case OutboxDeliveryFailure.permanent(let message):
            description = message
        case OutboxDeliveryFailure.retryable(let message, let retryAfter):
            description = message
            next = nextAttempt(after: operation.attempts, retryAfter: retryAfter)
        case is CancellationError where Task.isCancelled:
            // The processor stopped: the operation is due again at once, for any processor.
            description = "the delivery was cancelled"
            next = now()
        default:
            description = String(describing: failure)
            next = nextAttempt(after: operation.attempts, retryAfter: nil)
        }
        var recorded = description
        if next != nil, operation.attempts >= retryPolicy.maximumAttempts {
            next = nil
            recorded = "\(operation.attempts) attempts failed; the last: \(description)"
        }
        let error = recorded
        let identity = identity
        let release = next
        try await record(.outboxFailed) { try $0.release(operation.id, processor: identity, error: error, next: release) }
        if next == nil { report.deadLettered += 1 } else { report.retried += 1 }
    }

    /// Records a delivery's outcome in one transaction; also when the processor's task was
    /// cancelled meanwhile (in a task of its own then), so a delivered operation is not sent
    /// again and a failed one does not wait for its lease to end.
    private func record(_ operation: StoreOperation, _ body: @escaping @Sendable (OutboxEngine) throws -> Void) async throws {
        let store = store
        let write: @Sendable () async throws -> Void = {
            try await store.performWrite(operation, collection: nil) { context in try body(OutboxEngine(engine: context.engine)) }
        }
        if Task.isCancelled { try await Task { try await write() }.value } else { try await write() }
    }

    /// When the next attempt is due after `attempts` failed attempts: backoff with jitter,
    /// never before `retryAfter`.
    nonisolated func nextAttempt(after attempts: Int, retryAfter: Duration?) -> Date {
        let delay = retryPolicy.delay(afterAttempts: attempts).seconds
        let jittered = delay > 0 ? random(delay / 2...delay) : 0
        let wait = max(jittered, retryAfter?.seconds ?? 0)
        return now().addingTimeInterval(wait)
    }

    // MARK: Running

    /// Delivers due operations until the task is cancelled: after each round it sleeps until
    /// the earliest next attempt is due, or until an enqueue on this store commits, whichever
    /// comes first (and at most ``idleInterval``). Retries never wait for a new write.
    ///
    /// Cancellation stops it; undelivered operations stay pending (one being delivered at
    /// that moment is retried later).
    /// - Throws: `CancellationError` when cancelled, or the store's error.
    public func run() async throws {
        let signal = store.core.outboxSignal
        while true {
            try Task.checkCancellation()
            let seen = signal.generation
            try await deliverDue()
            let earliest = try await store.perform(.outboxSchedule, collection: nil) {
                try OutboxEngine(engine: $0).earliestDue()
            }
            var wait = Self.idleInterval
            if let earliest {
                let seconds = max(0, earliest.timeIntervalSince(now()))
                wait = min(wait, .milliseconds(Int64((seconds * 1000).rounded(.up))))
            }
            if wait > .zero { try await sleep(wait, orUntilEnqueuedAfter: seen, signal: signal) }
        }
    }

    /// Sleeps for `duration` or until `signal` moves past `generation`.
    private func sleep(_ duration: Duration, orUntilEnqueuedAfter generation: UInt64, signal: OutboxSignal) async throws {
        let sleep = sleep
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sleep(duration) }
            group.addTask { await signal.wait(after: generation) }
            defer { group.cancelAll() }
            _ = try await group.next()
        }
        try Task.checkCancellation()
    }
}
