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
    /// The outcomes of the deliveries that ended since the last transaction, and the claims
    /// of the next operations, are recorded in one write transaction (see
    /// `settle(_:claiming:due:excluding:report:)`), never an operation claimed before it starts.
    ///
    /// - Throws: a ``RecordStoreError`` when the store fails (operations then stay pending and
    ///   claimed ones are delivered again after their lease), or `CancellationError`.
    @discardableResult
    public func deliverDue() async throws -> OutboxDeliveryReport {
        try retryPolicy.validate()
        let due = now()
        var report = OutboxDeliveryReport()
        var attempted = Set<UUID>()
        let finished = FinishedDeliveries()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Deliveries started whose outcome is not yet taken from `finished`.
            var running = 0
            var first = true
            while true {
                let ended = finished.take()
                running -= ended.count
                let free = Self.maximumConcurrentDeliveries - running
                // Look for work at the start and after outcomes (only they change what is
                // deliverable); once cancelled, start nothing new but record what ended.
                let claiming = (first || !ended.isEmpty) && free > 0 && !Task.isCancelled
                first = false
                var started: [OutboxOperation] = []
                if claiming || !ended.isEmpty {
                    started = try await settle(
                        ended, claiming: claiming ? free : 0, due: due, excluding: attempted, report: &report)
                }
                for operation in started {
                    attempted.insert(operation.id)
                    running += 1
                    let transport = transport
                    group.addTask {
                        do {
                            try await transport.deliver(operation)
                            finished.add(operation, failure: nil)
                        } catch {
                            finished.add(operation, failure: error)
                        }
                    }
                }
                if running == 0 { break }
                // A delivery ended (its outcome is in `finished`), or one whose outcome was
                // already taken returned.
                _ = try await group.next()
            }
        }
        try Task.checkCancellation()
        return report
    }

    /// When the next attempt is due after `attempts` failed attempts: backoff with jitter,
    /// never before `retryAfter` (taken for at most a day, whatever a transport says).
    nonisolated func nextAttempt(after attempts: Int, retryAfter: Duration?) -> Date {
        let delay = retryPolicy.delay(afterAttempts: attempts).seconds
        let jittered = delay > 0 ? random(delay / 2...delay) : 0
        let asked = min(retryAfter?.seconds ?? 0, Double(HTTPClientSupport.longestRetryAfter))
        let wait = max(jittered, asked)
        return now().addingTimeInterval(wait)
    }

    // MARK: Running

    /// Delivers due operations until the task is cancelled: after each round it sleeps until
    /// the earliest next attempt is due, or until an enqueue on this store commits, whichever
    /// comes first (and at most ``idleInterval``). Retries never wait for a new write.
    ///
    /// Cancellation stops it; undelivered operations stay pending (one being delivered at
    /// that moment is retried later).
    ///
    /// A round the store fails (busy past its timeout, a full disk, a file it cannot open) does
    /// not end it: the failure goes to the store's
    /// ``RecordStore/Options/eventHandler`` (``RecordStoreEvent/outboxRoundFailed(_:)``) and
    /// the round is tried again after ``storeRetryDelay(afterFailures:)`` (1 s, doubling to
    /// the idle interval), or at the next enqueue. An app that runs it as
    /// `Task { try await processor.run() }` never has delivery stop unseen.
    /// - Throws: `CancellationError` when cancelled; ``RecordStoreError`` (`invalidArgument`)
    ///   at once for a ``RetryPolicy`` that cannot work.
    public func run() async throws {
        // A policy that cannot work is the caller's mistake: thrown, not retried.
        try retryPolicy.validate()
        let signal = store.outboxSignal
        var failures = 0
        while true {
            try Task.checkCancellation()
            let seen = signal.generation
            var wait = Self.idleInterval
            do {
                try await deliverDue()
                let earliest = try await store.perform(.outboxSchedule, collection: nil) {
                    try $0.outbox.earliestDue()
                }
                failures = 0
                if let earliest {
                    let seconds = max(0, earliest.timeIntervalSince(now()))
                    wait = min(wait, .milliseconds(Int64((seconds * 1000).rounded(.up))))
                }
            } catch let error as RecordStoreError {
                try Task.checkCancellation()
                failures += 1
                store.options.eventHandler?(.outboxRoundFailed(error))
                wait = Self.storeRetryDelay(afterFailures: failures)
            }
            if wait > .zero { try await sleep(wait, orUntilEnqueuedAfter: seen, signal: signal) }
        }
    }

    /// How long ``run()`` waits after `failures` rounds in a row the store failed: 1 s,
    /// doubling, at most ``idleInterval``.
    public static func storeRetryDelay(afterFailures failures: Int) -> Duration {
        let doublings = min(max(failures - 1, 0), 16)
        return min(.seconds(1 << doublings), idleInterval)
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
