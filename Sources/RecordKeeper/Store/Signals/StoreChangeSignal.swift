import Dispatch

/// What wakes a change watcher (`ChangeWatcher`) when another connection or process may have
/// committed to the store file, so that it checks `PRAGMA data_version` and serves its waiting
/// consumers. A signal only says "look": the check decides, so a spurious wake-up costs one
/// cheap pragma, and a missed one costs latency (the adaptive poll behind every event source
/// looks anyway), never a change.
///
/// Every method is called on the watcher's queue (its connection's, with that connection's lock
/// held), and a signal calls its `wake` closure on that queue, so a signal needs no locks of its
/// own (hence `Sendable`, unchecked in each one: its state is only ever touched on that one
/// serial queue). `wake` takes the connection's lock: a signal calls it from its own handlers
/// (a timer, an event), never from within one of these methods.
///
/// Implementations: `InotifyChangeSignal` (Linux: the kernel reports writes to the store's
/// directory), `DarwinChangeSignal` (Apple platforms: a Darwin notification that writers post
/// after each logged commit, and a file-system object source on the `-wal` file) and
/// `AdaptivePoll` (everywhere: the fallback, and the backstop behind the others).
protocol StoreChangeSignal: AnyObject, Sendable {
    /// Whether some consumer waits now. A signal may sleep while none does (the poll does).
    func consumersWaiting(_ waiting: Bool)
    /// The watcher checked the file; `foundChange` says whether another connection had
    /// committed. A poll looks again soon after a change, and less and less often without.
    func checked(foundChange: Bool)
    /// Stops for good: no wake-up after it returns.
    func cancel()
}

/// Which signals a watcher uses.
enum ChangeSignalChoice: Sendable, Equatable {
    /// The platform's event source where it has one (inotify on Linux, Darwin notifications
    /// and a file-system source on Apple platforms), with the adaptive poll as its backstop;
    /// the adaptive poll alone elsewhere. The default.
    case platform
    /// The adaptive poll alone (for tests of the fallback; what a platform without an event
    /// source gets).
    case adaptivePoll
}

enum StoreChangeSignals {
    /// The signal for the store at `path`, whose file is `identity` (nil while there is no
    /// store file yet), calling `wake` on `queue`: the platform's event source with the
    /// adaptive poll behind it as a slow backstop, or the poll alone with its fast fallback
    /// schedule when there is no event source (or it could not be set up).
    static func make(
        _ choice: ChangeSignalChoice, path: String, identity: StoreFileIdentity?, queue: DispatchQueue,
        wake: @escaping @Sendable () -> Void
    ) -> (signal: any StoreChangeSignal, hasEvents: Bool) {
        if choice == .platform {
            let backstop = AdaptivePoll(schedule: .backstop, queue: queue, wake: wake)
            // An event means "something was written": the poll looks again soon, since the
            // commit may become visible a moment after the write that announced it.
            let onEvent: @Sendable () -> Void = { [weak backstop] in
                backstop?.eventArrived()
                wake()
            }
            if let events = platformEvents(path: path, identity: identity, queue: queue, wake: onEvent) {
                return (CombinedSignal([events, backstop]), true)
            }
            backstop.cancel()
        }
        return (AdaptivePoll(schedule: .fallback, queue: queue, wake: wake), false)
    }

    private static func platformEvents(
        path: String, identity: StoreFileIdentity?, queue: DispatchQueue, wake: @escaping @Sendable () -> Void
    ) -> (any StoreChangeSignal)? {
        #if os(Linux)
            return InotifyChangeSignal(storePath: path, queue: queue, wake: wake)
        #elseif canImport(Darwin)
            return DarwinChangeSignal(storePath: path, identity: identity, queue: queue, wake: wake)
        #else
            return nil
        #endif
    }
}

/// Several signals as one. `@unchecked Sendable`: used on the watcher's queue only.
final class CombinedSignal: StoreChangeSignal, @unchecked Sendable {
    private let parts: [any StoreChangeSignal]

    init(_ parts: [any StoreChangeSignal]) { self.parts = parts }

    func consumersWaiting(_ waiting: Bool) { for part in parts { part.consumersWaiting(waiting) } }
    func checked(foundChange: Bool) { for part in parts { part.checked(foundChange: foundChange) } }
    func cancel() { for part in parts { part.cancel() } }
}
