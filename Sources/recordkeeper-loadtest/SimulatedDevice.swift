import Foundation
import RecordKeeper

/// The collection every simulated device syncs.
let loadCollection = "items"

/// One simulated device: an in-memory `RecordStore` (the same engine as on disk) with a
/// `RecordSync` through a ``RecordingServer`` to relay A or B, making random edits and deletes
/// of its own keys while a sync loop pushes soon after each commit and otherwise holds a live
/// pull.
final class SimulatedDevice: Sendable {
    let index: Int
    let space: String
    /// 0 for relay A, 1 for relay B.
    let relay: Int
    let store: RecordStore
    let sync: RecordSync
    let recorder: RecordingServer
    /// Held by each `sync()` call and by a collision's set-up.
    let lock = AsyncLock()
    /// Raised after every local commit: the sync loop stops its live pull and pushes.
    let edited = Signal()

    struct State: Sendable {
        /// The device's own keys: the last value it wrote, nil once it deleted the key.
        var own: [String: Data?] = [:]
        var nextKey = 0
        var edits = 0
        /// Local transactions that changed a synced record (each is one operation).
        var transactions = 0
        var reportedConflicts: [String] = []
        var syncRounds = 0
        var livePulls = 0
        /// Whether a live pull is out now.
        var holding = false
        /// Errors other than `.unreachable` (a finding: reported at the end).
        var failures: [String] = []
    }
    let state = Locked(State())

    init(index: Int, space: String, relay: Int, server: @escaping @Sendable () -> any RecordSyncServer) {
        self.index = index
        self.space = space
        self.relay = relay
        store = RecordStore.inMemory()
        recorder = RecordingServer(server)
        sync = RecordSync(store: store, server: recorder)
    }

    var name: String { "device \(index) (\(space), relay \(relay == 0 ? "A" : "B"))" }

    func start() async throws {
        try await sync.start(space: space, collections: [loadCollection])
    }

    // MARK: Edits

    /// One random edit of the device's own keys: a new key, a change of one, or a deletion.
    func randomEdit(_ random: inout SplitMix64) async throws {
        let (live, nextKey) = state.withLock { state in
            (state.own.filter { $0.value != nil }.map(\.key).sorted(), state.nextKey)
        }
        let roll = random.unit()
        let key: String
        var value: Data? = nil
        if live.count < 4 || roll < 0.35 {
            key = "d\(index)-k\(nextKey)"
            state.withLock { $0.nextKey += 1 }
        } else {
            key = live[Int(random.next() % UInt64(live.count))]
        }
        if live.contains(key) && roll >= 0.8 {
            guard try await store.delete(loadCollection, key: key) else {
                throw LoadTestFailure("\(name): its own key \(key) was not there to delete")
            }
        } else {
            let edit = state.withLock { state -> Int in
                state.edits += 1
                return state.edits
            }
            let data = Data("{\"device\":\(index),\"edit\":\(edit),\"pad\":\"\(String(repeating: "x", count: Int(random.next() % 64)))\"}".utf8)
            try await store.put(loadCollection, key: key, data: data)
            value = data
        }
        state.withLock { state in
            state.own[key] = .some(value)
            state.transactions += 1
        }
        edited.raise()
    }

    /// Writes `data` to `key` (a collision key, not one of its own), as one local transaction.
    func write(_ key: String, _ data: Data) async throws {
        try await store.put(loadCollection, key: key, data: data)
        state.withLock { $0.transactions += 1 }
        edited.raise()
    }

    // MARK: Sync

    /// One `sync()` under the device's lock; records its conflicts.
    func syncOnce() async throws -> SyncReport {
        try await lock.run { try await self.syncHoldingLock() }
    }

    /// One `sync()` by a caller that holds ``lock``; records its conflicts.
    func syncHoldingLock() async throws -> SyncReport {
        let report = try await sync.sync()
        state.withLock { state in
            state.syncRounds += 1
            state.reportedConflicts += report.newConflicts.map(\.key)
        }
        return report
    }

    /// Until cancelled: sync, then hold a live pull until it answers with changes or the device
    /// commits; back off with jitter while unreachable.
    func syncLoop(liveWait: Duration, seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        var failures = 0
        while !Task.isCancelled {
            let cursor: SyncCursor
            do {
                cursor = try await syncOnce().cursor
                failures = 0
            } catch {
                if Task.isCancelled { return }
                note(error, "sync")
                failures += 1
                await backOff(failures, &random)
                continue
            }
            let held = await holdLivePull(after: cursor, wait: liveWait)
            if !held {
                failures += 1
                await backOff(failures, &random)
            }
        }
    }

    /// Holds a live pull (through the relay) until the space has changes after `cursor`, the
    /// wait passes, or the device commits; false when the pull failed.
    private func holdLivePull(after cursor: SyncCursor, wait: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    self.state.withLock {
                        $0.livePulls += 1
                        $0.holding = true
                    }
                    defer { self.state.withLock { $0.holding = false } }
                    _ = try await self.recorder.pull(
                        space: self.space, after: cursor, limit: 1, collections: [loadCollection], wait: wait)
                    return true
                } catch {
                    if Task.isCancelled { return true }
                    self.note(error, "live pull")
                    return false
                }
            }
            group.addTask {
                await self.edited.wait()
                return true
            }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
    }

    /// Unreachable is expected while a relay or database restarts; anything else is a finding.
    func note(_ error: any Error, _ what: String) {
        if let error = error as? SyncError, error.code == .unreachable { return }
        if error is CancellationError { return }
        state.withLock { $0.failures.append("\(what): \(error)") }
    }

    private func backOff(_ failures: Int, _ random: inout SplitMix64) async {
        let base = min(0.05 * pow(2, Double(min(failures, 6) - 1)), 1.0)
        let seconds = base * (0.5 + random.unit())
        do {
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        } catch {
            return  // cancelled: the loop ends
        }
    }
}

/// A small deterministic generator (SplitMix64), so a run can be repeated with `--seed`.
struct SplitMix64: Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform value in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
