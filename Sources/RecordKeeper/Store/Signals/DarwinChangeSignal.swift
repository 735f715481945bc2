#if canImport(Darwin)
    import Darwin
    import Dispatch
    import Foundation
    #if canImport(notify)
        import notify
    #endif

    /// Apple platforms: two event sources for other processes' commits.
    ///
    /// - A Darwin notification (`notify_register_dispatch`) named after the store file's device
    ///   and inode (`CommitNotice`), which every `RecordStore` writer posts after a commit that
    ///   logged changes, that is while some stream observes the file. Names are one namespace
    ///   for the whole system, so the name is a hash, not the path; an app and its extensions
    ///   open the same file, so they agree on it. Posting costs one call to `notifyd` per
    ///   observed commit; unobserved commits post nothing.
    /// - A file-system object source (`DispatchSource.makeFileSystemObjectSource`, kqueue's
    ///   `EVFILT_VNODE`) on the `-wal` file, opened `O_EVTONLY`: it reports writes by any
    ///   process, including writers that post nothing (another SQLite program, a RecordKeeper
    ///   version from before these notifications). Only the `-wal` is opened, never the store
    ///   file: closing any descriptor of the store file would drop the process's SQLite locks on
    ///   it (see `SQLiteFile`); SQLite holds no locks on the `-wal` itself. When the `-wal` is
    ///   deleted or renamed the source ends; it is opened again at the next event.
    ///
    /// Proven only on Darwin (the workflow `.github/workflows/apple.yml` runs the suites there);
    /// the backstop poll behind it keeps the guarantee if either source stays silent.
    ///
    /// `@unchecked Sendable`: every method and handler runs on the watcher's queue.
    final class DarwinChangeSignal: StoreChangeSignal, @unchecked Sendable {
        private let queue: DispatchQueue
        private let wake: @Sendable () -> Void
        private let logPath: String
        private var token: Int32 = 0
        private var registered = false
        private var logSource: (any DispatchSourceFileSystemObject)?
        private var cancelled = false

        /// Nil when neither source could be set up (no store file yet, no `-wal`): the watcher
        /// then polls.
        init?(storePath: String, identity: StoreFileIdentity?, queue: DispatchQueue, wake: @escaping @Sendable () -> Void) {
            self.queue = queue
            self.wake = wake
            logPath = storePath + "-wal"
            #if canImport(notify)
                if let identity {
                    var token: Int32 = 0
                    let status = notify_register_dispatch(CommitNotice.name(for: identity), &token, queue) { _ in wake() }
                    if status == 0 {
                        self.token = token
                        registered = true
                    }
                }
            #endif
            watchLog()
            guard registered || logSource != nil else { return nil }
        }

        deinit {
            if !cancelled { cancel() }
        }

        func consumersWaiting(_ waiting: Bool) {}
        func checked(foundChange: Bool) {
            // A write may have been announced by an event that found the log gone: open it again.
            if logSource == nil { watchLog() }
        }

        func cancel() {
            cancelled = true
            #if canImport(notify)
                if registered { notify_cancel(token) }
            #endif
            registered = false
            logSource?.cancel()
            logSource = nil
        }

        /// Watches the `-wal` file, if there is one.
        private func watchLog() {
            guard !cancelled, logSource == nil else { return }
            let descriptor = open(logPath, O_EVTONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            let source = DispatchSource.makeFileSystemObjectSource(
                fileDescriptor: descriptor, eventMask: [.write, .extend, .delete, .rename, .revoke], queue: queue)
            source.setEventHandler { [weak self] in self?.logChanged() }
            source.setCancelHandler { close(descriptor) }
            source.resume()
            logSource = source
        }

        /// The `-wal` was written (or went away: then its source ends, and the next check opens
        /// the new one).
        private func logChanged() {
            guard let source = logSource else { return }
            if !source.data.isDisjoint(with: [.delete, .rename, .revoke]) {
                source.cancel()
                logSource = nil
            }
            wake()
        }
    }

    /// The Darwin notification writers post after an observed commit (see `DarwinChangeSignal`).
    enum CommitNotice {
        /// `org.recordkeeper.commit.` and 32 hexadecimal digits of the SHA-256 of the file's
        /// device and inode: the same for every process that opens the file, by any path.
        static func name(for identity: StoreFileIdentity) -> String {
            "org.recordkeeper.commit." + SHA256.hexDigest(Array("\(identity.device):\(identity.inode)".utf8)).prefix(32)
        }

        /// Posts the notice for the store file `identity`. Its status is not checked: a lost
        /// notice costs latency (the `-wal` source and the poll still see the commit), never a
        /// change.
        static func post(_ identity: StoreFileIdentity) {
            #if canImport(notify)
                _ = notify_post(name(for: identity))
            #endif
        }
    }
#endif
