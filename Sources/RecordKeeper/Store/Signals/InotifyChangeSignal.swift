#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc

    /// Linux: the kernel's inotify reports every write to the store file and its `-wal` in the
    /// store's directory (a commit writes its frames to the `-wal` with `write(2)`; a checkpoint
    /// writes the store file; replacing the file is a rename into the directory), by any
    /// process, as it happens. The watcher then checks `PRAGMA data_version`.
    ///
    /// The directory is watched rather than the files, so a `-wal` that is deleted and created
    /// again (the last connection to close deletes it) or a store file created later (a stream
    /// taken before the store exists) is still seen. Writes to other files in the directory
    /// wake nothing. A queue overflow (`IN_Q_OVERFLOW`) or the end of the watch (the directory
    /// was removed) wakes the watcher too; from then on the backstop poll keeps looking.
    /// File systems where other processes' writes raise no events (network file systems, some
    /// FUSE file systems) are covered by that backstop: a missed event costs latency, never a
    /// change.
    ///
    /// Every store's signal shares the process's one inotify instance (`InotifyWatches`):
    /// the kernel allows each user only a few instances.
    ///
    /// `@unchecked Sendable`: `cancelled` is read and written on the watcher's queue only (a
    /// wake-up is sent there and checks it), and `cancel` is called there.
    final class InotifyChangeSignal: StoreChangeSignal, @unchecked Sendable {
        private final class State: @unchecked Sendable {
            // On the watcher's queue only (see above).
            var cancelled = false
        }

        private let subscription: UInt64
        private let state = State()

        /// Nil when inotify cannot watch the directory (it does not exist yet, the per-user
        /// instance or watch limit is reached): the watcher then polls.
        init?(storePath: String, queue: DispatchQueue, wake: @escaping @Sendable () -> Void) {
            var directory = (storePath as NSString).deletingLastPathComponent
            if directory.isEmpty { directory = "." }
            let base = (storePath as NSString).lastPathComponent
            let names: Set<[UInt8]> = [Array(base.utf8), Array((base + "-wal").utf8)]
            let state = self.state
            let notify: @Sendable () -> Void = {
                queue.async { if !state.cancelled { wake() } }
            }
            guard let subscription = InotifyWatches.shared.subscribe(directory: directory, names: names, notify: notify)
            else { return nil }
            self.subscription = subscription
        }

        func consumersWaiting(_ waiting: Bool) {}
        func checked(foundChange: Bool) {}

        func cancel() {
            state.cancelled = true
            InotifyWatches.shared.unsubscribe(subscription)
        }

        /// Whether the shared instance still watches for this store (for tests).
        var isWatchingForTesting: Bool { InotifyWatches.shared.isWatching(subscription) }
    }
#endif
