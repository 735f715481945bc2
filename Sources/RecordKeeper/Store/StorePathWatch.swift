#if os(Linux)
    import Foundation
    import Glibc
#endif

/// Tells the writer when the store's path may name another file than the one it opened, so
/// that a commit checks `StoreFileIdentity` (a `stat` of the whole path, about 4 µs on the
/// 2-core VM of docs/PERFORMANCE.md, a fifth of a single save) only then.
///
/// Linux: one inotify instance for the process (`PathWatches`) watches every directory on
/// the path, as given and with its symbolic links resolved, for the entry of the next
/// component being created, deleted, moved or replaced, and for the directory itself moving
/// or going away. The kernel queues such an event inside the `rename`/`unlink` call that
/// caused it, so a change made before a commit is in the queue when the commit reads it (one
/// non-blocking `read`, under a microsecond). Any event that names a component of the path,
/// a lost event (queue overflow) or a watch the kernel ended makes the next check `stat`.
/// Other platforms, and a path inotify cannot watch (a directory it may not read, the
/// per-user limits reached), have no watch: every commit checks the path, as before.
///
/// Not covered, as with any watch of names: a file system mounted over a directory of the
/// path while the store is open.
final class StorePathWatch {
    #if os(Linux)
        private let id: UInt64

        private init(id: UInt64) { self.id = id }

        deinit { PathWatches.shared.unsubscribe(id) }
    #endif

    /// Starts watching `path` (absolute). Nil where nothing can watch it: check every time.
    /// Call before reading the identity the watch vouches for.
    static func make(path: String) -> StorePathWatch? {
        #if os(Linux)
            guard let resolved = realpath(path, nil) else { return nil }
            defer { free(resolved) }
            let paths = Set([path, String(cString: resolved)])
            return PathWatches.shared.subscribe(paths).map(StorePathWatch.init(id:))
        #else
            return nil
        #endif
    }

    /// True when nothing on the path has changed since the previous call (or since `make`);
    /// false when something may have: the caller checks the path itself.
    func isUnchanged() -> Bool {
        #if os(Linux)
            PathWatches.shared.isUnchanged(id)
        #else
            false
        #endif
    }
}

#if os(Linux)
    /// The process's one inotify instance for `StorePathWatch` (apart from the change
    /// signals' `InotifyWatches`, whose watches have another mask and end at other times).
    /// It has no read source: a check drains the queue itself, so nothing is ever in
    /// flight between the kernel and the answer.
    ///
    /// `@unchecked Sendable`: every stored property is read and written under `lock`.
    final class PathWatches: @unchecked Sendable {
        static let shared = PathWatches()

        private let lock = NSLock()
        private var descriptor: Int32 = -1
        /// Watch descriptor → subscription → the entry names in that directory that lie on
        /// the subscription's path.
        private var watches: [Int32: [UInt64: Set<[UInt8]>]] = [:]
        /// Subscription → its watch descriptors.
        private var watchesOf: [UInt64: Set<Int32>] = [:]
        /// Subscriptions whose path may have changed since their last check.
        private var changed: Set<UInt64> = []
        /// Subscriptions one of whose watches the kernel ended: checked every time.
        private var broken: Set<UInt64> = []
        private var nextID: UInt64 = 0

        private static let mask = UInt32(
            IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR)

        /// Watches each directory of each of `paths` for the next component's entry. Nil
        /// (watching nothing) if any directory cannot be watched.
        func subscribe(_ paths: Set<String>) -> UInt64? {
            lock.lock()
            defer { lock.unlock() }
            if descriptor < 0 {
                guard let made = InotifyEvents.makeInstance() else { return nil }
                descriptor = made
            }
            // Events already queued (other subscriptions share directories, such as the
            // temporary directory, whose earlier changes may name this path) happened before
            // this watch: they go to the subscriptions that were there.
            drainLocked()
            nextID += 1
            let id = nextID
            watchesOf[id] = []
            for path in paths {
                let components = path.split(separator: "/", omittingEmptySubsequences: true)
                guard path.hasPrefix("/"), !components.isEmpty else {
                    removeLocked(id)
                    return nil
                }
                var directory = "/"
                for component in components {
                    let watch = inotify_add_watch(descriptor, directory, Self.mask)
                    guard watch >= 0 else {
                        removeLocked(id)
                        return nil
                    }
                    watches[watch, default: [:]][id, default: []].insert(Array(component.utf8))
                    watchesOf[id, default: []].insert(watch)
                    directory += (directory == "/" ? "" : "/") + component
                }
            }
            return id
        }

        func unsubscribe(_ id: UInt64) {
            lock.lock()
            defer { lock.unlock() }
            removeLocked(id)
        }

        /// Reads the queue, then answers for `id` and clears its mark.
        func isUnchanged(_ id: UInt64) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            drainLocked()
            guard watchesOf[id] != nil, !broken.contains(id) else { return false }
            return changed.remove(id) == nil
        }

        private func removeLocked(_ id: UInt64) {
            changed.remove(id)
            broken.remove(id)
            for watch in watchesOf.removeValue(forKey: id) ?? [] {
                watches[watch]?[id] = nil
                if watches[watch]?.isEmpty == true {
                    watches[watch] = nil
                    // EINVAL when the kernel ended the watch already; nothing is stored.
                    _ = inotify_rm_watch(descriptor, watch)
                }
            }
        }

        private func drainLocked() {
            let complete = InotifyEvents.drain(descriptor) { watch, mask, name in
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    changed.formUnion(watchesOf.keys)
                } else if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0 {
                    changed.formUnion((watches[watch] ?? [:]).keys)
                    if mask & UInt32(IN_IGNORED) != 0 {
                        // The kernel ended the watch: its subscribers check every time.
                        for id in (watches[watch] ?? [:]).keys {
                            broken.insert(id)
                            watchesOf[id]?.remove(watch)
                        }
                        watches[watch] = nil
                    }
                } else if let name {
                    for (id, names) in watches[watch] ?? [:] where names.contains(name) { changed.insert(id) }
                }
            }
            // A failed read may have lost events: every path is checked.
            if !complete { changed.formUnion(watchesOf.keys) }
        }
    }
#endif
