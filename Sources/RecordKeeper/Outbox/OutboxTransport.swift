import Foundation

/// Why a delivery failed, as a transport reports it.
///
/// Any other error a transport throws (a timeout, a lost connection) counts as
/// ``retryable(_:retryAfter:)``: the outcome of such a request is unknown, so the operation is
/// sent again with the same idempotency key.
public enum OutboxDeliveryFailure: Error, Sendable {
    /// Try again later; not before `retryAfter` when the server said so.
    case retryable(String, retryAfter: Duration? = nil)
    /// The request never reached the server: no network, a host name that could not be
    /// resolved, nothing accepting the connection. Retried with the same backoff as
    /// ``retryable(_:retryAfter:)``, but not counted toward ``RetryPolicy/maximumAttempts``
    /// (``OutboxOperation/unreachableAttempts``): being offline never dead-letters anything.
    case unreachable(String)
    /// The server refused the operation for good: it moves to the dead letters.
    case permanent(String)
}

/// Sends outbox operations to a server.
///
/// Delivery is at least once: an operation whose delivery was under way when the process
/// died, or whose outcome is unknown, is delivered again with the same ``OutboxOperation/id``.
/// The receiver must dedupe by that id.
public protocol OutboxTransport: Sendable {
    /// Delivers one operation. Returning means the server accepted it; throwing
    /// ``OutboxDeliveryFailure/permanent(_:)`` dead-letters it; any other error retries it.
    func deliver(_ operation: OutboxOperation) async throws
}

/// How an ``OutboxProcessor`` spaces out the attempts of an operation that keeps failing.
///
/// After the *n*-th failed attempt the next one is due after
/// `d = min(maximumDelay, initialDelay × 2^(n-1))`, jittered uniformly into `[d/2, d]`, and
/// never before a server's `Retry-After` (taken for at most a day). An operation that reaches ``maximumAttempts``
/// attempts without success moves to the dead letters; attempts that never reached the server
/// (``OutboxDeliveryFailure/unreachable(_:)``) do not count toward it.
public struct RetryPolicy: Sendable {
    /// The delay after the first failure (default 1 s).
    public var initialDelay: Duration
    /// The longest delay between attempts (default 5 min).
    public var maximumDelay: Duration
    /// Attempts after which an operation is dead-lettered (default 20).
    public var maximumAttempts: Int

    /// Creates a policy.
    public init(
        initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(300), maximumAttempts: Int = 20
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }

    /// Throws `invalidArgument` naming the field for a policy that cannot work: fewer than
    /// one attempt (every operation would be dead-lettered unattempted), or a negative delay.
    func validate() throws(RecordStoreError) {
        var problems: [String] = []
        if maximumAttempts < 1 { problems.append("maximumAttempts is \(maximumAttempts), not 1 or more") }
        if initialDelay < .zero { problems.append("initialDelay is \(initialDelay), below zero") }
        if maximumDelay < .zero { problems.append("maximumDelay is \(maximumDelay), below zero") }
        guard !problems.isEmpty else { return }
        throw RecordStoreError(
            code: .invalidArgument, operation: .outboxClaim,
            detail: "the outbox's retry policy cannot work: " + problems.joined(separator: "; ") + "; nothing was delivered")
    }

    /// The delay before the next attempt after `attempts` attempts, before jitter.
    func delay(afterAttempts attempts: Int) -> Duration {
        let doublings = max(0, min(attempts - 1, 62))
        let seconds = initialDelay.seconds * pow(2, Double(doublings))
        return .seconds(min(maximumDelay.seconds, seconds))
    }
}

/// What one ``OutboxProcessor/deliverDue()`` call did.
///
/// A failure counts only when this processor recorded it: one answered after its claim ran
/// out (another processor may have delivered the operation meanwhile) changed nothing and
/// counts nowhere.
public struct OutboxDeliveryReport: Sendable, Equatable {
    /// Operations delivered and removed from the outbox.
    public var delivered: Int
    /// Operations that failed and were scheduled again.
    public var retried: Int
    /// Operations moved to the dead letters.
    public var deadLettered: Int

    /// Creates a report.
    public init(delivered: Int = 0, retried: Int = 0, deadLettered: Int = 0) {
        self.delivered = delivered
        self.retried = retried
        self.deadLettered = deadLettered
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
