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
    /// On the connection's queue: tells the signal whether a consumer waits now, making the
    /// signal first when one is needed.
    func consumersWaitingChanged(_ state: WatcherState) {
        guard let path, !state.suspended else { return }
        let waiting = hasWaiting
        if waiting { ensureSignal(path, state) }
        state.signal?.consumersWaiting(waiting)
    }

    /// On the connection's queue: a signal that fits the file as it is now. Its dispatch
    /// sources fire on that queue, and its wake-up takes the connection's lock there (never
    /// called with the lock held: a signal only arms and cancels when told).
    private func ensureSignal(_ path: String, _ state: WatcherState) {
        // Made once per file: a platform whose event source could not be set up for this file
        // keeps its poll (and its adaptive schedule) instead of trying again at every wait.
        if state.signal != nil, state.signalIdentity == state.connectionIdentity { return }
        stopSignal(state)
        let made = StoreChangeSignals.make(
            options.changeSignal, path: path, identity: state.connectionIdentity, queue: connection().executor.queue,
            wake: { [weak self] in self?.wake() })
        state.signal = made.signal
        state.signalIdentity = state.connectionIdentity
        state.signalHasEvents = made.hasEvents
    }

    func stopSignal(_ state: WatcherState) {
        state.signal?.cancel()
        state.signal = nil
        state.signalIdentity = nil
        state.signalHasEvents = false
    }

    /// On the connection's queue, when the signal fires.
    private func wake() {
        existingConnection?.withLock { check($0) }
    }

    /// On the connection's queue, when the signal wakes: serves the parked consumers if another
    /// connection committed (or the file cannot be read yet: the read will tell).
    fileprivate func check(_ state: WatcherState) {
        // With nobody waiting there is nothing to serve: the next consumer to ask reads its
        // position in the log anyway (an event source wakes for every write, waiting or not).
        guard !state.suspended, hasWaiting else { return }
        if followReplacedFile(state) { return serveParked(state) }
        // A read that failed since the last change was served (reported) is tried again at
        // every check: the data version it saw moved already, and may not move again.
        let retrying = state.serveFailing
        let version = readDataVersion(state)
        let changed = version == nil || version != state.lastDataVersion
        if let version { state.lastDataVersion = version }
        state.signal?.checked(foundChange: changed && version != nil)
        // Serving tells the signal who still waits, and makes it again for a file that
        // appeared (or was replaced) meanwhile.
        if changed || retrying { serveParked(state) }
    }

    /// When another file is at the path now (the store was deleted and made again, restored,
    /// renamed over) or none is: drops the connection to the old file, whose log never moves
    /// again, and the observers' lock taken beside it, so that the next read opens what is at
    /// the path; every stream's next element is then a full state of its collection. True when
    /// it did. (A snapshot connection follows its file by its stamp.)
    private func followReplacedFile(_ state: WatcherState) -> Bool {
        guard let path, state.connection != nil, state.snapshotStamp == nil, let opened = state.connectionIdentity else {
            return false
        }
        guard StoreFileIdentity.replacement(of: opened, at: path) != nil else { return false }
        state.connection = nil
        state.connectionIdentity = nil
        state.lastDataVersion = nil
        state.observerLock?.release()
        state.observerLock = nil
        state.serveFailing = false  // reads of the new file report their own failures
        requireFullState()
        return true
    }

    // MARK: Suspension

    /// Stops observing until `resume()`: releases the observers' lock and ends the signal, so
    /// the process holds no lock of the library's and wakes for nothing. Streams stay
    /// registered and parked consumers keep waiting; nothing is delivered meanwhile. Blocks
    /// until done (at most the read in progress on the watcher's queue).
    func suspend() {
        guard path != nil else { return }
        // First, so that a write committing meanwhile keeps no lock after its commit.
        markSuspended(true)
        onQueue { state in
            guard !state.suspended else { return }
            // What the file looked like to this connection, to tell at `resume()` whether
            // anyone committed meanwhile (writers need not log while nobody holds the lock).
            state.versionAtSuspension = state.connection == nil ? nil : readDataVersion(state)
            state.stampAtSuspension = state.snapshotStamp
            state.suspended = true
            stopSignal(state)
            state.observerLock?.release()
            state.observerLock = nil
        }
    }

    /// Observes again after `suspend()`: takes the observers' lock first (so every later write
    /// logs), then compares the file with what it was at the suspension. Unchanged, every
    /// stream goes on from its position in the log; changed (or unknown), every stream's next
    /// element is a full state of its collection. Blocks until the lock is held (a write that
    /// runs unobserved in another connection at that moment is waited for).
    func resume() {
        guard let path else { return }
        markSuspended(false)
        onQueue { state in
            guard state.suspended else { return }
            state.suspended = false
            guard hasSubscribers else {
                state.versionAtSuspension = nil
                state.stampAtSuspension = nil
                return
            }
            let unchanged: Bool
            if let stamp = state.stampAtSuspension {
                // An immutable snapshot: its data version never moves; the file tells. The
                // lock first, as below: from now on every writer logs.
                claimObserverLock(state)
                unchanged = stamp.isCurrent(path)
            } else if state.connection != nil {
                claimObserverLock(state)
                let version = readDataVersion(state)
                unchanged = version != nil && version == state.versionAtSuspension
                if let version { state.lastDataVersion = version }
            } else {
                // No store was open at the suspension: streams that were positioned before the
                // store deliver every record anyway; the others resync.
                unchanged = false
            }
            state.versionAtSuspension = nil
            state.stampAtSuspension = nil
            if !unchanged { requireFullState() }
            serveParked(state)
        }
    }
}

extension ChangeWatcher {
    /// What the watcher holds now (for tests): a signal, whether it has an event source, the
    /// observers' lock, and whether observation is suspended.
    func stateForTesting() -> (signal: Bool, events: Bool, observerLock: Bool, suspended: Bool) {
        guard let connection = existingConnection else { return (false, false, false, false) }
        return connection.executor.sync {
            connection.withLock { ($0.signal != nil, $0.signalHasEvents, $0.observerLock != nil, $0.suspended) }
        }
    }

    /// Makes the next `count` reads of the log for a stream fail (for tests), as a busy or
    /// unreadable file would.
    func failServesForTesting(_ count: Int) {
        guard let connection = existingConnection else { return }
        connection.executor.sync { connection.withLock { $0.failServesForTesting = count } }
    }

    /// Whether a consumer is parked, waiting for a change (for tests).
    func waitingForTesting() -> Bool { hasWaiting }

    /// Runs the check a signal's wake-up runs (for tests: as the backstop poll would).
    func checkForTesting() {
        guard let connection = existingConnection else { return }
        connection.executor.sync { connection.withLock { check($0) } }
    }
}
