import Foundation

/// Recording outcomes and claiming operations: one write transaction per turn of
/// ``OutboxProcessor/deliverDue()``, for every delivery that ended since the last one.
extension OutboxProcessor {
    /// What an ended delivery leaves to write.
    struct Outcome: Sendable {
        let id: UUID
        /// Nil: delivered (the operation is removed). Otherwise the error recorded and, when
        /// it is retried, the next attempt's due time (nil there: a dead letter).
        let failure: (error: String, next: Date?)?
        /// The attempt never reached the server: it does not count toward the attempts limit.
        var unreachable = false
    }

    /// Records the outcomes of `ended` and claims up to `limit` deliverable operations, in one
    /// write transaction, counting an attempt for each claimed one. Operations that already
    /// used up their attempts (a delivery that never finished) go to the dead letters instead.
    ///
    /// Only deliveries the transport already answered are recorded, and only operations
    /// started at once are claimed, so batching changes no outcome: if the process dies
    /// before this commits, the operations delivered meanwhile stay claimed and are delivered
    /// again, with the same id, once their lease ends (at least once, as when a process dies
    /// between one delivery and its own transaction); an operation that failed is attempted
    /// again then, its attempt counted. When the store fails, nothing of the batch is written
    /// and the same holds.
    func settle(
        _ ended: [(OutboxOperation, (any Error)?)], claiming limit: Int, due: Date, excluding attempted: Set<UUID>,
        report: inout OutboxDeliveryReport
    ) async throws -> [OutboxOperation] {
        let outcomes = ended.map { outcome(of: $0.0, failure: $0.1) }
        let now = now()
        let until = now.addingTimeInterval(lease.seconds)
        let identity = identity
        let maximumAttempts = retryPolicy.maximumAttempts
        let store = store
        let operation: StoreOperation =
            outcomes.isEmpty ? .outboxClaim : outcomes.allSatisfy { $0.failure == nil } ? .outboxDelivered : .outboxFailed
        let write: @Sendable () async throws -> ([OutboxOperation], [OutboxOperation], Set<UUID>) = {
            try await store.performWrite(operation, collection: nil, inline: store.mayWriteInline(outcomes.count + limit)) {
                context -> ([OutboxOperation], [OutboxOperation], Set<UUID>) in
                let outbox = context.engine.outbox
                // The failures this processor's claim still covered: only those were written
                // (a claim that ran out may be another processor's now).
                var released = Set<UUID>()
                for outcome in outcomes {
                    if let failure = outcome.failure {
                        if try outbox.release(
                            outcome.id, processor: identity, error: failure.error, next: failure.next,
                            unreachable: outcome.unreachable)
                        {
                            released.insert(outcome.id)
                        }
                    } else {
                        try outbox.remove(outcome.id)
                    }
                }
                let (claimed, buried) = try Self.claim(
                    in: outbox, due: due, now: now, until: until, limit: limit, excluding: attempted,
                    processor: identity, maximumAttempts: maximumAttempts)
                return (claimed, buried, released)
            }
        }
        // Also when the processor's task was cancelled meanwhile (in a task of its own then),
        // so a delivered operation is not sent again and a failed one does not wait for its
        // lease to end.
        let (claimed, buried, released) = try await Task.isCancelled ? Task { try await write() }.value : write()
        var deadLettered = buried
        for (outcome, (ended, _)) in zip(outcomes, ended) {
            switch outcome.failure {
            case nil: report.delivered += 1
            case let failure?:
                // Counted and reported only when this write recorded it: an answer that came
                // after the claim ran out changed nothing (another processor may have delivered
                // the operation, or be delivering it).
                guard released.contains(outcome.id) else { continue }
                guard failure.next == nil else { report.retried += 1; continue }
                report.deadLettered += 1
                deadLettered.append(ended.withLastError(failure.error))
            }
        }
        report.deadLettered += buried.count
        if let handler = store.options.eventHandler {
            for operation in deadLettered { handler(.outboxDeadLettered(operation)) }
        }
        return claimed.map {
            OutboxOperation(
                id: $0.id, kind: $0.kind, payload: $0.payload, orderingKey: $0.orderingKey,
                attempts: $0.attempts + 1, createdAt: $0.createdAt, nextAttemptAt: $0.nextAttemptAt,
                lastError: $0.lastError, unreachableAttempts: $0.unreachableAttempts)
        }
    }

    /// Claims up to `limit` deliverable operations for `processor` inside a write transaction;
    /// returns them (as read before the claim) and those it moved to the dead letters (with
    /// the error recorded).
    private static func claim(
        in outbox: OutboxTable, due: Date, now: Date, until: Date, limit: Int, excluding attempted: Set<UUID>,
        processor: String, maximumAttempts: Int
    ) throws -> ([OutboxOperation], [OutboxOperation]) {
        var claimed: [OutboxOperation] = []
        var buried: [OutboxOperation] = []
        // Dead-lettering one may let the next of its key through: look again until stable.
        while claimed.count < limit {
            let taken = claimed
            let candidates = try outbox.deliverable(due: due, now: now, limit: limit - claimed.count) { id in
                attempted.contains(id) || taken.contains { $0.id == id }
            }
            var buriedNow = false
            for candidate in candidates {
                if candidate.countedAttempts >= maximumAttempts {
                    let previous = candidate.lastError.map { "; last error: \($0)" } ?? ""
                    let error = "\(candidate.countedAttempts) delivery attempts were started and none succeeded\(previous)"
                    try outbox.bury(candidate.id, error: error)
                    buried.append(candidate.withLastError(error))
                    buriedNow = true
                } else {
                    try outbox.claim(candidate.id, processor: processor, until: until)
                    claimed.append(candidate)
                }
            }
            if !buriedNow { break }
        }
        return (claimed, buried)
    }

    /// What to write for a delivery that ended with `failure` (nil: delivered).
    private func outcome(of operation: OutboxOperation, failure: (any Error)?) -> Outcome {
        guard let failure else { return Outcome(id: operation.id, failure: nil) }
        let description: String
        var next: Date?
        switch failure {
        case OutboxDeliveryFailure.permanent(let message):
            description = message
        case OutboxDeliveryFailure.retryable(let message, let retryAfter):
            description = message
            next = nextAttempt(after: operation.attempts, retryAfter: retryAfter)
        case OutboxDeliveryFailure.unreachable(let message):
            // Backed off like any failure (a phone offline is not asked every second), never
            // counted toward the limit.
            return Outcome(
                id: operation.id, failure: (message, nextAttempt(after: operation.attempts, retryAfter: nil)), unreachable: true)
        case is CancellationError where Task.isCancelled:
            // The processor stopped: the operation is due again at once, for any processor.
            description = "the delivery was cancelled"
            next = now()
        default:
            description = String(describing: failure)
            next = nextAttempt(after: operation.attempts, retryAfter: nil)
        }
        guard next != nil, operation.countedAttempts >= retryPolicy.maximumAttempts else {
            return Outcome(id: operation.id, failure: (description, next))
        }
        return Outcome(id: operation.id, failure: ("\(operation.countedAttempts) attempts failed; the last: \(description)", nil))
    }
}

/// The deliveries of one ``OutboxProcessor/deliverDue()`` call that ended and are not yet
/// recorded, filled by its child tasks and taken by the call, which thus records every
/// delivery that ended meanwhile in one transaction, not only the one it woke up for.
final class FinishedDeliveries: Sendable {
    private let ended = Protected<[(OutboxOperation, (any Error)?)]>([])

    /// Adds a delivery that ended; `failure` nil when the transport returned.
    func add(_ operation: OutboxOperation, failure: (any Error)?) {
        ended.withLock { $0.append((operation, failure)) }
    }

    /// The deliveries that ended since the last call, in the order they ended.
    func take() -> [(OutboxOperation, (any Error)?)] {
        ended.withLock { ended in
            defer { ended = [] }
            return ended
        }
    }
}

extension OutboxOperation {
    /// The operation with `lastError` as recorded when it moved to the dead letters.
    fileprivate func withLastError(_ error: String) -> OutboxOperation {
        OutboxOperation(
            id: id, kind: kind, payload: payload, orderingKey: orderingKey, attempts: attempts, createdAt: createdAt,
            nextAttemptAt: nextAttemptAt, lastError: error, unreachableAttempts: unreachableAttempts)
    }
}
