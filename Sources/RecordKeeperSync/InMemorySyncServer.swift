public import Foundation

/// A ``RecordSyncServer`` held in memory, with the same rules as `PostgresSyncServer`: for
/// tests of sync clients, and as the executable statement of the protocol's rules.
///
/// ```swift
/// let server = InMemorySyncServer()
/// let outcomes = try await server.push(space: "alice", operations: [operation])
/// ```
///
/// It compacts like `PostgresSyncServer` (``compact(space:olderThan:)``), measuring ages with
/// the clock it was given, so tests move time forward instead of waiting.
public actor InMemorySyncServer: SyncCompactingServer, SyncPagesPulling {
    private struct Space {
        var counter: Int64 = 0
        var outcomes: [UUID: (outcome: SyncOutcome, receivedAt: Date)] = [:]
        var devices: [String: SyncDeviceState] = [:]
        var records: [SyncRecordKey: SyncStoredRecord] = [:]
        var horizon: Int64 = 0
        /// The lowest cursor mark handed out per bucket (``SyncHorizon``).
        var marks: [Int64: Int64] = [:]
    }

    private var spaces: [String: Space] = [:]
    private let now: @Sendable () -> Date
    /// The payload bytes one pull reads (``SyncPage/payloadBudget``).
    private let pullByteBudget: Int
    /// The live pulls held now.
    private let waiters = SyncChangeWaiters()

    /// Creates an empty server.
    ///
    /// - Parameter now: the clock ages are measured with (operations received, cursors handed
    ///   out, compaction); the system clock unless given.
    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(now: now, pullByteBudget: SyncPage.payloadBudget)
    }

    /// A server whose pulls read less than `pullByteBudget` payload bytes plus the change that
    /// crosses it (``SyncPage/payloadBudget``), for tests of paging by size with small records.
    package init(now: @escaping @Sendable () -> Date = { Date() }, pullByteBudget: Int) {
        precondition(pullByteBudget >= 1, "a pull's byte budget is at least 1")
        self.now = now
        self.pullByteBudget = pullByteBudget
    }

    public func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try SyncRequestValidation.validatePush(space: space, operations: operations)
        var current = spaces[space] ?? Space()
        // What the push may read, as a server loads it: only the ids, devices and records the
        // operations name (handing over whole dictionaries would copy them on the first write).
        var state = SyncPushState(counter: current.counter, horizon: current.horizon)
        for operation in operations {
            state.recorded[operation.id] = current.outcomes[operation.id]?.outcome
            state.devices[operation.device] = current.devices[operation.device]
            for change in operation.changes {
                let id = SyncRecordKey(collection: change.collection, key: change.key)
                state.records[id] = current.records[id]
            }
        }
        let plan = try SyncPushPlanner.plan(operations, state: state, space: space)
        let receivedAt = now()
        for operation in plan.newOperations { current.outcomes[operation.id] = (operation.outcome, receivedAt) }
        current.devices.merge(plan.devices) { $1 }
        for write in plan.writes { current.records[write.id] = write.record }
        let advanced = plan.counter != current.counter
        current.counter = plan.counter
        spaces[space] = current
        if advanced { waiters.notify(space: space) }
        return plan.outcomes
    }

    /// A live pull: held until a push of the space commits or `wait` passes.
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try await waiters.livePull(space: space, after: cursor, wait: wait) { cursor in
            try await pull(space: space, after: cursor, limit: limit, collections: collections)
        }
    }

    /// How many live pulls the server holds now (for tests: a handshake instead of a sleep).
    public var heldPulls: Int { waiters.count }

    public func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    /// Pulls the changes of `collections` only (every collection for `nil`), as
    /// `PostgresSyncServer` does: the cursor stays the space's.
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?
    ) async throws -> SyncPage {
        try await pullPages(space: space, after: cursor, limit: limit, collections: collections, pages: 1)[0]
    }

    /// Up to `pages` consecutive pages from one snapshot (``SyncPagesPulling``).
    package func pullPages(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, pages: Int
    ) async throws -> [SyncPage] {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        // As PostgreSQL's: at most `SyncPage.maximumLimit` changes in all.
        let pages = max(1, min(pages, SyncPage.maximumLimit / limit))
        let current = spaces[space] ?? Space()
        if SyncHorizon.isBehind(cursor, horizon: current.horizon) {
            throw SyncHorizon.behind(cursor, horizon: current.horizon, space: space)
        }
        let after = current.records
            .filter { id, record in
                if let collections, !collections.contains(id.collection) { return false }
                let version = record.version.rawValue
                if version != cursor.counter { return version > cursor.counter }
                guard let position = cursor.position else { return false }
                return SyncOrdering.precedes(position.collection, position.key, id.collection, id.key)
            }
            .sorted { a, b in
                if a.value.version != b.value.version { return a.value.version < b.value.version }
                return SyncOrdering.precedes(a.key.collection, a.key.key, b.key.collection, b.key.key)
            }
        let read = after.prefix(limit * pages + 1).map { id, record in
            SyncPulledChange(
                collection: id.collection, key: id.key, value: record.value,
                version: record.version, itemVersion: record.itemVersion)
        }
        let kept = SyncPage.countWithinBudget(read, budget: pullByteBudget)
        let result = SyncPage.assemblePages(
            Array(read.prefix(kept)), limit: limit, pages: pages, head: current.counter, cursor: cursor,
            horizon: current.horizon, cutShort: kept < read.count)
        if spaces[space] != nil {
            // The lowest cursor handed out is the first page's.
            let bucket = SyncHorizon.bucket(of: now())
            let mark = SyncHorizon.mark(of: result[0].cursor)
            spaces[space]?.marks[bucket] = min(mark, current.marks[bucket] ?? mark)
        }
        return result
    }

    public func compact(space: String, olderThan age: Duration) async throws -> SyncCompaction {
        let (cutoff, firstBucket) = try SyncHorizon.window(space: space, now: now(), age: age)
        guard var current = spaces[space] else {
            return SyncCompaction(space: space, horizon: 0, deletedTombstones: 0, deletedOperations: 0)
        }
        let old = current.outcomes.values.filter { $0.receivedAt < cutoff }
        current.horizon = SyncHorizon.next(
            current: current.horizon,
            lowestMark: current.marks.filter { $0.key >= firstBucket }.values.min(),
            receivedBefore: old.compactMap { $0.outcome.result.appliedVersion?.rawValue }.max())
        let horizon = current.horizon
        let tombstones = current.records.filter { $0.value.value == .tombstone && $0.value.version.rawValue <= horizon }
        for id in tombstones.keys { current.records[id] = nil }
        var deletedOperations = 0
        for (id, operation) in current.outcomes where operation.receivedAt < cutoff {
            if let version = operation.outcome.result.appliedVersion, version.rawValue > horizon { continue }
            current.outcomes[id] = nil
            deletedOperations += 1
            let device = operation.outcome.device
            if var state = current.devices[device] {
                state.compactedSequence = max(state.compactedSequence, operation.outcome.sequence)
                current.devices[device] = state
            }
        }
        current.marks = current.marks.filter { $0.key >= firstBucket }
        spaces[space] = current
        return SyncCompaction(
            space: space, horizon: horizon, deletedTombstones: tombstones.count, deletedOperations: deletedOperations)
    }
}
