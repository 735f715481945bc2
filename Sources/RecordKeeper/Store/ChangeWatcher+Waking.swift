import Dispatch
import Foundation

/// What wakes parked consumers for other connections' commits, and suspension.
///
/// The signal (`StoreChangeSignal`) is made when a consumer first waits, for the file as the
/// watcher's connection sees it (made again when the file's identity changes, including once
/// the store exists when it did not), and ends with the last stream or a suspension. Each wake-up
/// checks `PRAGMA data_version` of the watcher's connection: one cheap pragma, and the serving
/// of every parked consumer when another connection committed.
extension ChangeWatcher {
    /// On `queue`: tells the signal whether a consumer waits now, making the signal first when
    /// one is needed.
    func consumersWaitingChanged() {
        guard let path, !suspended else { return }
        let waiting = hasWaiting
        if waiting { ensureSignal(path) }
        signal?.consumersWaiting(waiting)
    }

    /// On `queue`: a signal that fits the file as it is now.
    private func ensureSignal(_ path: String) {
        // Made once per file: a platform whose event source could not be set up for this file
        // keeps its poll (and its adaptive schedule) instead of trying again at every wait.
        if signal != nil, signalIdentity == connectionIdentity { return }
        stopSignal()
        let made = StoreChangeSignals.make(
            options.changeSignal, path: path, identity: connectionIdentity, queue: queue,
            wake: { [weak self] in self?.check() })
        signal = made.signal
        signalIdentity = connectionIdentity
        signalHasEvents = made.hasEvents
    }

    func stopSignal() {
        signal?.cancel()
        signal = nil
        signalIdentity = nil
        signalHasEvents = false
    }

    /// On `queue`, when the signal wakes: serves the parked consumers if another connection
    /// committed (or the file cannot be read yet: the read will tell).
    private func check() {
        // With nobody waiting there is nothing to serve: the next consumer to ask reads its
        // position in the log anyway (an event source wakes for every write, waiting or not).
        guard !suspended, hasWaiting else { return }
        let version = readDataVersion()
        let changed = version == nil || version != lastDataVersion
        if let version { lastDataVersion = version }
        signal?.checked(foundChange: changed && version != nil)
        // Serving tells the signal who still waits, and makes it again for a file that
        // appeared (or was replaced) meanwhile.
        if changed { serveParked() }
    }

    // MARK: Suspension

    /// Stops observing until `resume()`: releases the observers' lock and ends the signal, so
    /// the process holds no lock of the library's and wakes for nothing. Streams stay
    /// registered and parked consumers keep waiting; nothing is delivered meanwhile. Blocks
    /// until done (at most the read in progress on the watcher's queue).
    func suspend() {
        guard path != nil else { return }
        queue.sync {
            guard !suspended else { return }
            // What the file looked like to this connection, to tell at `resume()` whether
            // anyone committed meanwhile (writers need not log while nobody holds the lock).
            versionAtSuspension = connection == nil ? nil : readDataVersion()
            stampAtSuspension = snapshotStamp
            suspended = true
            stopSignal()
            observerLock?.release()
            observerLock = nil
        }
    }

    /// Observes again after `suspend()`: takes the observers' lock first (so every later write
    /// logs), then compares the file with what it was at the suspension. Unchanged, every
    /// stream goes on from its position in the log; changed (or unknown), every stream's next
    /// element is a full state of its collection. Blocks until the lock is held (a write that
    /// runs unobserved in another connection at that moment is waited for).
    func resume() {
        guard let path else { return }
        queue.sync {
            guard suspended else { return }
            suspended = false
            guard hasSubscribers else {
                versionAtSuspension = nil
                stampAtSuspension = nil
                return
            }
            let unchanged: Bool
            if let stamp = stampAtSuspension {
                // An immutable snapshot: its data version never moves; the file tells.
                unchanged = stamp.isCurrent(path)
            } else if connection != nil {
                claimObserverLock()
                let version = readDataVersion()
                unchanged = version != nil && version == versionAtSuspension
                if let version { lastDataVersion = version }
            } else {
                // No store was open at the suspension: streams that were positioned before the
                // store deliver every record anyway; the others resync.
                unchanged = false
            }
            versionAtSuspension = nil
            stampAtSuspension = nil
            if !unchanged { requireFullState() }
            serveParked()
        }
    }
}

extension ChangeWatcher {
    /// What the watcher holds now (for tests): a signal, whether it has an event source, the
    /// observers' lock, and whether observation is suspended.
    func stateForTesting() -> (signal: Bool, events: Bool, observerLock: Bool, suspended: Bool) {
        queue.sync { (signal != nil, signalHasEvents, observerLock != nil, suspended) }
    }
}
