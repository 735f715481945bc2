public import Foundation

/// An operation for a server, to be queued in the store's outbox together with the local
/// change it describes.
///
/// Enqueue it inside the write that makes the change (``RecordTransaction/enqueue(_:)`` or
/// ``RecordStore/apply(_:changes:expecting:enqueue:)``): the records and the operation commit together or
/// not at all, so a crash can neither lose the operation nor send one for a change that never
/// happened.
///
/// ```swift
/// let message = OutboxMessage(kind: "cart.add-item", payload: body, orderingKey: "cart/\(owner)")
/// try await store.apply("carts", changes: changes, enqueue: [message])
/// ```
public struct OutboxMessage: Sendable, Hashable {
    /// The operation's identity and idempotency key: unique among the operations queued in
    /// the store. A receiver dedupes by it (delivery is at least once).
    public var id: UUID
    /// What the operation does, such as `"cart.add-item"`. Must not be empty.
    public var kind: String
    /// The request body the transport sends.
    public var payload: Data
    /// Operations with the same key are delivered strictly in enqueue (commit) order, one at
    /// a time; operations without a key are delivered independently of each other.
    public var orderingKey: String?

    /// Creates a message; `id` defaults to a new random UUID.
    public init(id: UUID = UUID(), kind: String, payload: Data, orderingKey: String? = nil) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.orderingKey = orderingKey
    }
}

/// One queued operation as the outbox holds it: the message plus its delivery state.
public struct OutboxOperation: Sendable, Equatable, Identifiable {
    /// The message's id: the idempotency key.
    public let id: UUID
    /// The message's kind.
    public let kind: String
    /// The message's payload.
    public let payload: Data
    /// The message's ordering key.
    public let orderingKey: String?
    /// Delivery attempts started so far (an attempt counts when it starts, so one that never
    /// finished, because the process died, counts too).
    public let attempts: Int
    /// Those of ``attempts`` that never reached the server
    /// (``OutboxDeliveryFailure/unreachable(_:)``: no network, a host name not resolved, nothing
    /// listening). They space out the next attempts like any failure but do not count toward
    /// ``RetryPolicy/maximumAttempts``: a device offline for days sends everything once it is
    /// back, and dead-letters nothing for having been offline.
    public let unreachableAttempts: Int
    /// When the operation was enqueued (millisecond precision).
    public let createdAt: Date
    /// When the next delivery attempt is due (millisecond precision).
    public let nextAttemptAt: Date
    /// The last failure's description, if any.
    public let lastError: String?

    /// Creates an operation value (for transports' tests; the outbox makes the real ones).
    public init(
        id: UUID, kind: String, payload: Data, orderingKey: String?, attempts: Int,
        createdAt: Date, nextAttemptAt: Date, lastError: String?, unreachableAttempts: Int = 0
    ) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.orderingKey = orderingKey
        self.attempts = attempts
        self.unreachableAttempts = unreachableAttempts
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
    }
}

extension OutboxOperation {
    /// The attempts that count toward ``RetryPolicy/maximumAttempts``: those that did not fail
    /// for want of reaching the server.
    var countedAttempts: Int { attempts - unreachableAttempts }
}

/// Validated messages, checked before a transaction begins so that bad input writes nothing.
struct ValidatedMessages {
    let messages: [OutboxMessage]

    init(_ messages: [OutboxMessage], operation: StoreOperation) throws {
        var seen = Set<UUID>(minimumCapacity: messages.count)
        for message in messages {
            guard !message.kind.isEmpty else {
                throw RecordStoreError(
                    code: .invalidArgument, operation: operation, key: message.id.uuidString,
                    detail: "an outbox message needs a kind; this one's is empty")
            }
            guard seen.insert(message.id).inserted else {
                throw RecordStoreError(
                    code: .invalidArgument, operation: operation, key: message.id.uuidString,
                    detail: "the outbox message id \(message.id.uuidString) appears twice in one request")
            }
        }
        self.messages = messages
    }
}
