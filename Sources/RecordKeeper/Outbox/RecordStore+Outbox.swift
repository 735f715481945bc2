public import Foundation

extension RecordTransaction {
    /// Queues `message` in the outbox; it commits with the rest of this transaction, or not at
    /// all when the body or the commit throws.
    ///
    /// ```swift
    /// try await store.write { tx in
    ///     try tx.put("carts", key: owner, data: cartData)
    ///     try tx.enqueue(OutboxMessage(kind: "cart.add-item", payload: body, orderingKey: owner))
    /// }
    /// ```
    /// - Throws: ``RecordStoreError/Code/invalidArgument`` for an empty kind or an id already
    ///   queued; like every error thrown in the body, it rolls back the whole transaction when
    ///   rethrown.
    public func enqueue(_ message: OutboxMessage) throws {
        try checkUsable(.enqueue)
        let input = try ValidatedMessages([message], operation: .enqueue)
        try context.enqueue(input)
    }
}

extension WriteContext {
    /// Inserts validated messages and notes that this transaction enqueued, so the store
    /// signals waiting processors after the commit.
    func enqueue(_ input: ValidatedMessages) throws {
        guard !input.messages.isEmpty else { return }
        try engine.outbox.insert(input.messages, now: Date())
        observer(OutboxCommitObserver.self)?.noteEnqueued()
    }
}

extension RecordStore {
    /// Queues `messages` in the outbox in one transaction, without changing any record.
    /// - Throws: ``RecordStoreError`` (an empty kind, a duplicate id): nothing is queued then.
    public nonisolated(nonsending) func enqueue(_ messages: [OutboxMessage]) async throws {
        let queued = try ValidatedMessages(messages, operation: .enqueue)
        _ = try await performWrite(.enqueue, collection: nil, inline: mayWriteInline(queued.messages.count)) {
            context in
            try context.enqueue(queued)
        }
    }

    /// The store's outbox: its pending operations and dead letters.
    public nonisolated var outbox: Outbox { Outbox(store: self) }
}

/// The operations a store holds for a server: pending ones and dead letters.
///
/// Operations are added with the writes that make the local change
/// (``RecordTransaction/enqueue(_:)``, ``RecordStore/apply(_:changes:expecting:enqueue:)``) and
/// delivered by an ``OutboxProcessor``. Dead letters stay until ``requeue(_:)`` or
/// ``discard(_:)``: the outbox never drops an operation by itself.
public struct Outbox: Sendable {
    let store: RecordStore

    /// Operations not delivered and not dead, in enqueue order. Never writes: a store that
    /// does not exist yet, or whose format predates the outbox, has none.
    public func pending() async throws -> [OutboxOperation] {
        try await operations(.outboxPending, dead: false)
    }

    /// Operations that failed permanently or used up their attempts, in enqueue order, each
    /// with its last error.
    public func deadLetters() async throws -> [OutboxOperation] {
        try await operations(.outboxDeadLetters, dead: true)
    }

    /// Reads queued operations beside the writer, like every read: it opens, creates and
    /// migrates nothing.
    private func operations(_ operation: StoreOperation, dead: Bool) async throws -> [OutboxOperation] {
        try await store.performRead(operation, collection: nil) { source in
            guard let engine = source.engine else { return [] }
            let outbox = engine.outbox
            guard try outbox.hasOutbox() else { return [] }
            return try outbox.operations(dead: dead)
        }
    }

    /// Makes a dead letter pending again: due now, with no attempts counted, behind every
    /// operation queued now, as if enqueued again (operations of its ordering key that went on
    /// while it was a dead letter may be under way: it never starts beside them).
    /// - Throws: ``RecordStoreError/Code/invalidArgument`` when `id` is not a dead letter.
    public func requeue(_ id: UUID) async throws {
        let state = try await store.performWrite(.outboxRequeue, collection: nil) { context in
            let outbox = context.engine.outbox
            return try outbox.requeue(id, now: Date()) ? DeadLetterState.dead : try outbox.isPending(id) ? .pending : .absent
        }
        if state == .dead { store.outboxSignal.notify() } else { throw Self.notDead(id, state, .outboxRequeue) }
    }

    /// Removes one dead letter, explicitly and for good. A pending operation cannot be
    /// discarded: it is delivered, or becomes a dead letter when it fails for good or uses up
    /// its attempts; an outbox never drops an operation on its own.
    /// - Throws: ``RecordStoreError/Code/invalidArgument`` when `id` is not a dead letter (the
    ///   message says whether it is still pending or not queued at all); nothing is removed.
    public func discard(_ id: UUID) async throws {
        let state = try await store.performWrite(.outboxDiscard, collection: nil) { context in
            let outbox = context.engine.outbox
            return try outbox.discard(id) ? DeadLetterState.dead : try outbox.isPending(id) ? .pending : .absent
        }
        if state != .dead { throw Self.notDead(id, state, .outboxDiscard) }
    }

    /// What `requeue` or `discard` found at an id.
    private enum DeadLetterState: Sendable { case dead, pending, absent }

    private static func notDead(_ id: UUID, _ state: DeadLetterState, _ operation: StoreOperation) -> RecordStoreError {
        RecordStoreError(
            code: .invalidArgument, operation: operation, key: id.uuidString,
            detail: state == .pending
                ? "the operation is still pending, not a dead letter: only dead letters are requeued or discarded"
                : "there is no dead letter with this id, nor a pending operation")
    }
}
