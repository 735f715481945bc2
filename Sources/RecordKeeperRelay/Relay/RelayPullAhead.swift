import Foundation
import RecordKeeperSync

/// The next answer of a device catching up, pulled from the database while the answer before
/// it travels (docs/RELAY.md "Pulls read ahead").
///
/// When a pull of several pages (`pages=N`, not a live pull) answers with more to come, the
/// relay starts pulling the answer that starts at its last cursor, with the same space, limit,
/// collections (those read, after the token's grant) and number of pages: what the device's
/// next request asks for (`HTTPSyncServer` asks for it as soon as the answer arrives). That
/// request gets its pages instead of waiting for the database (the read ahead starts before
/// the answer before it is encoded and sent, so that the database works meanwhile). A pull with any
/// other parameters pulls as before, and so does the matching one when the read ahead failed
/// (its own pull then meets, and reports, the failure). The database was read earlier than
/// asked, never something else: each page is still what the read of its answer gave, as
/// when a slow network delays an answer.
///
/// At most ``SyncRelay/Configuration/pullsAhead`` answers are kept; one not asked for within
/// ``SyncRelay/Configuration/pullAheadKeptFor`` is dropped (its device went away or moved on).
final class RelayPullAhead: Sendable {
    /// What a pull asks, after authorization.
    struct Key: Hashable, Sendable {
        let space: String
        let cursor: SyncCursor
        let limit: Int
        let collections: Set<String>?
        let pages: Int
    }

    private struct Entry {
        let task: Task<[SyncPage]?, Never>
        let number: Int
        let started: ContinuousClock.Instant
    }

    private let capacity: Int
    /// How long an answer read ahead waits for its pull.
    private let keptFor: Duration
    private struct State {
        var entries: [Key: Entry] = [:]
        /// Reads dropped by ``forget(space:)`` while still running, by number: they count
        /// toward the capacity until they end, and ``drain()`` cancels them.
        var orphans: [Int: Task<[SyncPage]?, Never>] = [:]
        var nextNumber = 0
        /// Set by ``drain()``: nothing more is read ahead.
        var drained = false
    }

    private let state = Protected(State())

    init(capacity: Int, keptFor: Duration) {
        self.capacity = max(0, capacity)
        self.keptFor = keptFor
    }

    /// How many answers are being read ahead or wait for their pull.
    var count: Int { state.withLock { $0.entries.count } }

    /// How many reads dropped by a push still run.
    var orphanCount: Int { state.withLock { $0.orphans.count } }

    /// The answer read ahead for `key`, if any (it is handed out once).
    /// One kept longer than `keptFor` is dropped instead.
    func claim(_ key: Key) -> Task<[SyncPage]?, Never>? {
        let now = ContinuousClock.now
        let entry = state.withLock { $0.entries.removeValue(forKey: key) }
        guard let entry else { return nil }
        guard now - entry.started <= keptFor else {
            entry.task.cancel()
            return nil
        }
        return entry.task
    }

    /// Starts reading `key` ahead with `answer`, unless it is already or the relay keeps as
    /// many as it may (answers kept too long are dropped first).
    func start(_ key: Key, answer: @escaping @Sendable () async -> [SyncPage]?) {
        guard capacity > 0 else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            guard !state.drained else { return }
            for (stale, entry) in state.entries where now - entry.started > keptFor {
                entry.task.cancel()
                state.entries.removeValue(forKey: stale)
            }
            guard state.entries[key] == nil, state.entries.count + state.orphans.count < capacity else { return }
            state.nextNumber += 1
            let number = state.nextNumber
            state.entries[key] = Entry(task: Task { await answer() }, number: number, started: now)
        }
    }

    /// Drops the answers read ahead for `space`, once a push to it committed (or may have):
    /// read before it, they may hold a record at a version older than the one the pushing
    /// device was just answered, which it would take for a server gone back. Its next pull
    /// reads the database again.
    ///
    /// A read still running is left to finish, its answer unclaimed: cancelling it would
    /// cancel its statement, and the pool would give up that connection and open another
    /// for every push that caught a read ahead.
    /// It still counts toward the capacity until it ends, and ``drain()`` cancels it.
    func forget(space: String) {
        let dropped = state.withLock { state -> [Entry] in
            let keys = state.entries.keys.filter { $0.space == space }
            let dropped = keys.compactMap { state.entries.removeValue(forKey: $0) }
            for entry in dropped { state.orphans[entry.number] = entry.task }
            return dropped
        }
        // Each orphan goes when its read ends.
        for entry in dropped {
            Task { [self] in
                _ = await entry.task.value
                _ = self.state.withLock { $0.orphans.removeValue(forKey: entry.number) }
            }
        }
    }

    /// Cancels and drops every answer read ahead, and reads none ahead from now on (the
    /// relay is shutting down).
    func drain() {
        let dropped = state.withLock { state in
            state.drained = true
            defer {
                state.entries = [:]
                state.orphans = [:]
            }
            return state.entries.values.map(\.task) + state.orphans.values
        }
        for task in dropped { task.cancel() }
    }
}
