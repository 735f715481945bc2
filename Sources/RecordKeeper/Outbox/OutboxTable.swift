import Foundation

/// The gateway of the outbox table (format 2, `unreachable_attempts` since 9; see docs/FORMAT.md): its SQL, on the
/// connection of one request. Every SQLite failure leaves as a `RecordStoreError` naming the
/// operation and, where there is one, the message id (as its key).
///
/// Ids are stored as their 16 bytes, times as integer milliseconds since 1970. The table has
/// no index besides its rowid and the unique id: every index is one more page each enqueue's
/// commit writes (docs/PERFORMANCE.md, O1). The rowid is the enqueue order, so claims read
/// the table in its own order and stop early (see `deliverable`); the next due time reads
/// what is queued, which delivery keeps small. Rows with `dead = 0` are pending, `dead = 1`
/// are dead letters. A pending row with `claimed_until` in the future is being delivered by
/// the processor `claimed_by`.
struct OutboxTable {
    let runner: StatementRunner

    /// Whether the store has an outbox: a store of format 1 read without migrating has none.
    func hasOutbox() throws -> Bool {
        try runner.exists("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'outbox'")
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func millisecondsRoundingUp(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.up))
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    // MARK: Enqueueing

    /// Inserts `messages` in order (each gets the next sequence number), due at `now`.
    /// A message whose id is already queued throws `invalidArgument` (SQLite's code kept).
    func insert(_ messages: [OutboxMessage], now: Date) throws {
        let time = Self.milliseconds(now)
        for message in messages {
            do {
                try runner.connection.withStatement(
                    """
                    INSERT INTO outbox (id, kind, payload, ordering_key, created_at, next_attempt_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                    """
                ) { statement in
                    try statement.bind(message.id, at: 1)
                    try statement.bind(message.kind, at: 2)
                    try statement.bind(message.payload, at: 3)
                    if let key = message.orderingKey { try statement.bind(key, at: 4) } else { try statement.bindNull(at: 4) }
                    try statement.bind(time, at: 5)
                    try statement.run()
                }
            } catch let failure as SQLiteFailure where failure.code == .constraintUnique {
                // The unique index on `id` answers a duplicate; the statement wrote nothing and
                // the caller's transaction rolls back.
                let id = message.id.uuidString
                var error = RecordStoreError(failure, operation: runner.operation, key: id, path: runner.path)
                error.code = .invalidArgument
                error.detail = "an outbox operation with id \(id) is already queued"
                throw error
            } catch {
                throw runner.error(error, key: message.id.uuidString)
            }
        }
    }

    // MARK: Reading

    /// Pending (`dead: false`) or dead operations, in enqueue order.
    ///
    /// Reads never migrate: a store of a format before 9 has no `unreachable_attempts`, and
    /// reads none (0).
    func operations(dead: Bool) throws -> [OutboxOperation] {
        guard try runner.exists("SELECT 1 FROM pragma_table_info('outbox') WHERE name = 'unreachable_attempts'") else {
            return try runner.all(
                """
                SELECT id, kind, payload, ordering_key, attempts, created_at, next_attempt_at, last_error, 0
                FROM outbox WHERE dead = ?1 ORDER BY sequence
                """, dead ? 1 : 0
            ) { try operation($0) }
        }
        return try runner.all(
            """
            SELECT id, kind, payload, ordering_key, attempts, created_at, next_attempt_at, last_error, unreachable_attempts
            FROM outbox WHERE dead = ?1 ORDER BY sequence
            """, dead ? 1 : 0
        ) { try operation($0) }
    }

    /// The earliest time a pending operation may become deliverable (its due time, or the end
    /// of a claim on it), or nil when nothing is pending. Only the first pending operation of
    /// each ordering key counts: the ones behind it wait for it, however overdue they are.
    func earliestDue() throws -> Date? {
        try runner.one(
            """
            SELECT min(max(next_attempt_at, coalesce(claimed_until, 0))) FROM outbox
            WHERE dead = 0 AND (ordering_key IS NULL OR sequence IN (
                SELECT min(sequence) FROM outbox
                WHERE dead = 0 AND ordering_key IS NOT NULL GROUP BY ordering_key))
            """
        ) { $0.isNull(at: 0) ? nil : Self.date($0.int64(at: 0)) }
    }

    /// Decodes the columns id, kind, payload, ordering_key, attempts, created_at,
    /// next_attempt_at, last_error, unreachable_attempts.
    private func operation(_ statement: Statement) throws -> OutboxOperation {
        guard let id = statement.uuid(at: 0) else {
            let stored = statement.data(at: 0).map { String(format: "%02X", $0) }.joined()
            throw runner.malformed(key: stored, "an outbox row's id is not 16 bytes (a UUID); its bytes are shown in hex")
        }
        return OutboxOperation(
            id: id, kind: statement.string(at: 1), payload: statement.data(at: 2),
            orderingKey: statement.isNull(at: 3) ? nil : statement.string(at: 3),
            attempts: Int(statement.int64(at: 4)), createdAt: Self.date(statement.int64(at: 5)),
            nextAttemptAt: Self.date(statement.int64(at: 6)),
            lastError: statement.isNull(at: 7) ? nil : statement.string(at: 7),
            unreachableAttempts: Int(statement.int64(at: 8)))
    }

    // MARK: Dead letters

    /// Makes a dead letter pending again, due at `now`, with no attempts, behind every
    /// operation queued now: as if enqueued again. False when `id` is not a dead letter.
    ///
    /// Not in its old place: operations of its key that went on while it was a dead letter may
    /// be under way, and one first in line again would start beside them (two deliveries of
    /// one key at once).
    func requeue(_ id: UUID, now: Date) throws -> Bool {
        try runner.execute(
            """
            UPDATE outbox SET sequence = (SELECT max(sequence) FROM outbox) + 1, dead = 0, attempts = 0,
                unreachable_attempts = 0, next_attempt_at = ?2, claimed_by = NULL, claimed_until = NULL
            WHERE id = ?1 AND dead = 1
            """, id, Self.milliseconds(now), key: id.uuidString)
    }

    /// Removes one dead letter. False when `id` is not a dead letter.
    func discard(_ id: UUID) throws -> Bool {
        try runner.execute("DELETE FROM outbox WHERE id = ?1 AND dead = 1", id, key: id.uuidString)
    }

    /// Whether `id` is a pending operation (queued, not a dead letter).
    func isPending(_ id: UUID) throws -> Bool {
        try runner.one("SELECT 1 FROM outbox WHERE id = ?1 AND dead = 0", id, key: id.uuidString) { _ in true } ?? false
    }

    // MARK: Delivery

    /// Pending operations a processor may start now, in enqueue order, at most `limit`: due by
    /// `due`, not under a live claim at `now`, and first of their ordering key among pending
    /// operations (an earlier pending operation of the key, claimed or waiting, holds the
    /// later ones back; dead letters do not). Operations for which `skip` is true are left
    /// out, but still hold their key back.
    ///
    /// One pass over the pending rows in rowid (= `sequence`, enqueue) order, which is the
    /// table's own order: no index, no sort, and no grouping of the whole queue. A row is the
    /// first pending one of its key exactly when no earlier pending row had that key, so the
    /// pass notes the keys it has seen and stops once it has `limit` operations. Delivering a
    /// backlog thus reads about as many rows per claim as operations are waiting in front of
    /// the ones it starts, not the whole queue (docs/PERFORMANCE.md, O2).
    func deliverable(due: Date, now: Date, limit: Int, skip: (UUID) -> Bool) throws -> [OutboxOperation] {
        guard limit > 0 else { return [] }
        let dueTime = Self.milliseconds(due)
        let nowTime = Self.milliseconds(now)
        return try runner.withStatement(
            """
            SELECT id, kind, payload, ordering_key, attempts, created_at, next_attempt_at, last_error,
                unreachable_attempts, claimed_until
            FROM outbox WHERE dead = 0 ORDER BY sequence
            """
        ) { statement in
            var result: [OutboxOperation] = []
            var seenKeys = Set<String>()
            while result.count < limit, try statement.step() {
                if !statement.isNull(at: 3), !seenKeys.insert(statement.string(at: 3)).inserted { continue }
                guard statement.int64(at: 6) <= dueTime,
                    statement.isNull(at: 9) || statement.int64(at: 9) <= nowTime
                else { continue }
                let next = try operation(statement)
                if !skip(next.id) { result.append(next) }
            }
            return result
        }
    }

    /// Records that `processor` starts delivering `id`: counts the attempt and claims the
    /// operation until `until`.
    func claim(_ id: UUID, processor: String, until: Date) throws {
        try runner.execute(
            """
            UPDATE outbox SET attempts = attempts + 1, claimed_by = ?2, claimed_until = ?3
            WHERE id = ?1 AND dead = 0
            """, id, processor, Self.millisecondsRoundingUp(until), key: id.uuidString)
    }

    /// Removes a delivered operation, also when it is a dead letter by now: a delivery that
    /// outlived its lease may succeed after another processor's attempt of it failed for good,
    /// and an operation the server applied must not wait in the dead letters to be sent again.
    func remove(_ id: UUID) throws {
        try runner.execute("DELETE FROM outbox WHERE id = ?1", id, key: id.uuidString)
    }

    /// Releases `processor`'s claim on `id` after a failure: schedules the next attempt at
    /// `next`, or moves the operation to the dead letters; an attempt that never reached the
    /// server (`unreachable`) is counted as one. Does nothing when the claim is no longer this
    /// processor's (it expired and another processor took the operation): false then.
    @discardableResult
    func release(_ id: UUID, processor: String, error: String, next: Date?, unreachable: Bool = false) throws -> Bool {
        try runner.execute(
            """
            UPDATE outbox SET last_error = ?3, claimed_by = NULL, claimed_until = NULL,
                dead = CASE WHEN ?4 IS NULL THEN 1 ELSE 0 END,
                next_attempt_at = coalesce(?4, next_attempt_at),
                unreachable_attempts = unreachable_attempts + ?5
            WHERE id = ?1 AND claimed_by = ?2 AND dead = 0
            """, id, processor, error, next.map(Self.millisecondsRoundingUp), unreachable ? 1 : 0, key: id.uuidString)
    }

    /// Moves an operation that has used up its attempts to the dead letters.
    func bury(_ id: UUID, error: String) throws {
        try runner.execute(
            """
            UPDATE outbox SET dead = 1, last_error = ?2, claimed_by = NULL, claimed_until = NULL
            WHERE id = ?1 AND dead = 0
            """, id, error, key: id.uuidString)
    }
}
