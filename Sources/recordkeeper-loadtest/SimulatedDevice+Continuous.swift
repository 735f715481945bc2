import Foundation
import RecordKeeper

extension SimulatedDevice {
    /// `--continuous`: the device's `RecordSync.keepInSync()` (continuous sync) instead of the
    /// load test's own loops, until the task running it is cancelled; the conflicts its rounds
    /// report (``SyncActivity``) are recorded as the loops' are.
    ///
    /// Ending it cancels the task, and with it a held pull in flight (on Linux the library
    /// abandons such a request rather than cancel it: swiftlang/swift-corelibs-foundation#5412).
    func continuousSync(pullWait: Duration) async {
        let activities = sync.activity()
        let watcher = Task {
            // The stream's first element is the activity before keepInSync (`.stopped(nil)`);
            // every later one is this keepInSync's, the last `.stopped`.
            for await activity in activities.dropFirst() {
                switch activity {
                case .upToDate(let report), .needsAttention(_, let report):
                    state.withLock { state in
                        state.syncRounds += 1
                        state.reportedConflicts += report.newConflicts.map(\.key)
                    }
                case .offline(let error, _, _):
                    recordPartial(error)
                    note(error, "continuous sync (offline)")
                case .stopped(let error):
                    if let error = error as? SyncError { recordPartial(error) }
                    if let error { note(error, "continuous sync stopped") }
                    // The last activity of this keepInSync: every one before it was read.
                    return
                case .syncing:
                    break
                }
            }
        }
        do {
            var options = KeepInSyncOptions()
            options.pullWait = pullWait
            try await sync.keepInSync(options)
        } catch {
            note(error, "keepInSync")
        }
        // keepInSync published `.stopped` before it returned: the watcher reads up to it.
        await watcher.value
    }
}
