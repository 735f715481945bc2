import Foundation
import HarnessSupport
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
    /// Raised after every local commit and by a live pull that answered changes: the sync
    /// loop syncs.
    let wake = Signal()
    /// Raised after each sync round: the live pull loop pulls again.
    let roundDone = Signal()
    private let stopped = Locked(false)

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
        wake.raise()
    }

    /// Writes `data` to `key` (a collision key, not one of its own), as one local transaction.
    func write(_ key: String, _ data: Data) async throws {
        try await store.put(loadCollection, key: key, data: data)
        state.withLock { $0.transactions += 1 }
        wake.raise()
    }

    // MARK: Sync

    /// One `sync()` under the device's lock; records its conflicts.
    func syncOnce() async throws -> SyncReport {
        try await lock.run { try await self.syncHoldingLock() }
    }

    /// One `sync()` by a caller that holds ``lock``; records its conflicts.
    func syncHoldingLock() async throws -> SyncReport {
        let report: SyncReport
        do {
            report = try await sync.sync()
        } catch let error as SyncError {
            recordPartial(error)
            throw error
        }
        state.withLock { state in
            state.syncRounds += 1
            state.reportedConflicts += report.newConflicts.map(\.key)
        }
        return report
    }

    /// Until ``stop()``: sync after each local commit and each live pull that answered
    /// changes; back off with jitter while unreachable.
    ///
    /// Nothing here cancels a request in flight: on Linux, cancelling a task awaiting
    /// `URLSession.data(for:)` can deadlock with the session's own queue finishing it
    /// (swiftlang/swift-corelibs-foundation#5412, fixed after Swift 6.3.1), which stopped a
    /// whole run. So the live pull runs in a loop of its own and wakes this one, and both end
    /// at a flag.
    func syncLoop(seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        var failures = 0
        while !stopping {
            do {
                _ = try await syncOnce()
                failures = 0
                roundDone.raise()
            } catch {
                note(error, "sync")
                failures += 1
                await backOff(failures, &random)
                continue
            }
            await wake.wait()
        }
    }

    /// Until ``stop()``: holds a live pull from the stored cursor; when it answers changes,
    /// wakes the sync loop and waits for its round before pulling again.
    func livePullLoop(wait: Duration, seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        var failures = 0
        while !stopping {
            do {
                let cursor = try await store.syncStatus()?.cursor ?? .start
                state.withLock {
                    $0.livePulls += 1
                    $0.holding = true
                }
                defer { state.withLock { $0.holding = false } }
                let page = try await recorder.pull(
                    space: space, after: cursor, limit: 1000, collections: [loadCollection], wait: wait)
                failures = 0
                if !page.changes.isEmpty && !stopping {
                    wake.raise()
                    await roundDone.wait()
                }
            } catch {
                note(error, "live pull")
                failures += 1
                await backOff(failures, &random)
            }
        }
    }

    private var stopping: Bool { stopped.withLock { $0 } }

    /// Ends both loops: the sync loop after its round, the live pull when its pull answers.
    func stop() {
        stopped.withLock { $0 = true }
        wake.raise()
        roundDone.raise()
    }

    /// Records the conflicts a failed sync had recorded before it failed (its push's, when its
    /// pull failed during a restart).
    func recordPartial(_ error: SyncError) {
        guard let conflicts = error.partialReport?.newConflicts, !conflicts.isEmpty else { return }
        state.withLock { $0.reportedConflicts += conflicts.map(\.key) }
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
            return  // never cancelled (see syncLoop); a cancelled sleep only ends the pause
        }
    }
}
