#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc

    /// One inotify instance for the whole process, shared by every store's
    /// `InotifyChangeSignal`.
    ///
    /// The kernel allows each user few inotify instances (`fs.inotify.max_user_instances`,
    /// 128 by default, shared by all of that user's processes) but many watches per instance.
    /// An instance per observed store would run out in an app (or a test run) with a few dozen
    /// observed stores, and every store past the limit would fall back to polling. So there is
    /// one instance, one read source on a queue of its own, and one watch per directory,
    /// counted by the stores that observe a file in it; each event is handed to the stores
    /// whose file it names.
    ///
    /// `@unchecked Sendable`: every stored property is read and written under `lock`; the read
    /// source's handler runs on `queue` and takes the lock too. Subscribers' `notify` closures
    /// are called outside the lock.
    final class InotifyWatches: @unchecked Sendable {
        static let shared = InotifyWatches()

        private struct Subscriber {
            let names: Set<[UInt8]>
            let notify: @Sendable () -> Void
        }

        private let lock = NSLock()
        private let queue = DispatchQueue(label: "RecordKeeper.inotify")
        private var descriptor: Int32 = -1
        private var source: (any DispatchSourceRead)?
        /// Watch descriptor → subscription id → subscriber.
        private var watches: [Int32: [UInt64: Subscriber]] = [:]
        /// Subscription id → its watch descriptor.
        private var watchOf: [UInt64: Int32] = [:]
        private var nextID: UInt64 = 0

        private static let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)

        /// Watches `directory` for writes to files named `names` (or the end of the watch, or
        /// lost events), calling `notify` on this type's own queue each time. Nil when inotify
        /// cannot watch it (the directory does not exist, the instance or watch limit is
        /// reached): the caller polls instead.
        func subscribe(directory: String, names: Set<[UInt8]>, notify: @escaping @Sendable () -> Void) -> UInt64? {
            lock.lock()
            defer { lock.unlock() }
            if descriptor < 0 {
                // Made on first use, and again after a failure (the limit may have eased).
                guard let made = InotifyEvents.makeInstance() else { return nil }
                descriptor = made
                let source = DispatchSource.makeReadSource(fileDescriptor: made, queue: queue)
                source.setEventHandler { [unowned self] in self.drain() }
                source.resume()
                self.source = source
            }
            // The same directory watched twice gives the same watch descriptor.
            let watch = inotify_add_watch(descriptor, directory, Self.mask)
            guard watch >= 0 else { return nil }
            nextID += 1
            watches[watch, default: [:]][nextID] = Subscriber(names: names, notify: notify)
            watchOf[nextID] = watch
            return nextID
        }

        /// Ends a subscription; its `notify` is not called once this returns (a call already
        /// under way may still be finishing). The directory's watch goes with its last one.
        func unsubscribe(_ id: UInt64) {
            lock.lock()
            defer { lock.unlock() }
            guard let watch = watchOf.removeValue(forKey: id) else { return }
            watches[watch]?[id] = nil
            if watches[watch]?.isEmpty == true {
                watches[watch] = nil
                // EINVAL when the kernel ended the watch already (the directory went away);
                // nothing is stored either way.
                _ = inotify_rm_watch(descriptor, watch)
            }
        }

        /// Whether `id` is still watched (for tests).
        func isWatching(_ id: UInt64) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            return watchOf[id].map { watches[$0]?[id] != nil } ?? false
        }

        /// Reads every pending event and notifies the subscribers each one concerns.
        private func drain() {
            var due: [UInt64: @Sendable () -> Void] = [:]
            lock.lock()
            let complete = InotifyEvents.drain(descriptor) { watch, mask, name in
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    everyone(into: &due)
                } else if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                    for (id, subscriber) in watches[watch] ?? [:] { due[id] = subscriber.notify }
                    if mask & UInt32(IN_IGNORED) != 0 {
                        // The kernel ended this watch: its subscribers are left to their
                        // polls, and a later subscription to the directory watches it anew.
                        for id in (watches[watch] ?? [:]).keys { watchOf[id] = nil }
                        watches[watch] = nil
                    }
                } else if let name {
                    for (id, subscriber) in watches[watch] ?? [:] where subscriber.names.contains(name) {
                        due[id] = subscriber.notify
                    }
                }
            }
            // A failed read: everyone looks, the check will tell.
            if !complete { everyone(into: &due) }
            lock.unlock()
            for notify in due.values { notify() }
        }

        private func everyone(into due: inout [UInt64: @Sendable () -> Void]) {
            for subscribers in watches.values {
                for (id, subscriber) in subscribers { due[id] = subscriber.notify }
            }
        }
    }

    /// Reading an inotify instance's queue, for `InotifyWatches` and `PathWatches`.
    enum InotifyEvents {
        /// A new non-blocking, close-on-exec inotify instance; nil when the kernel refuses one
        /// (the per-user instance limit reached): the caller watches nothing.
        static func makeInstance() -> Int32? {
            let made = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            return made >= 0 ? made : nil
        }

        /// Reads (non-blocking) every event queued on `descriptor` and hands each to `handle`:
        /// its watch descriptor, mask and the entry name it concerns (nil for events of the
        /// watched directory itself). False when a read failed (other than with nothing left
        /// to read): events may have been lost.
        static func drain(_ descriptor: Int32, _ handle: (_ watch: Int32, _ mask: UInt32, _ name: [UInt8]?) -> Void) -> Bool {
            let capacity = 16 * 1024
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let count = read(descriptor, buffer, capacity)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno == EAGAIN
                }
                if count == 0 { return true }
                // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[len]; }
                var offset = 0
                while offset + 16 <= count {
                    let watch = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    var name: [UInt8]?
                    if length > 0, offset + 16 + length <= count {
                        let bytes = UnsafeRawBufferPointer(start: buffer + offset + 16, count: length)
                        name = Array(bytes.prefix { $0 != 0 })
                    }
                    handle(watch, mask, name)
                    offset += 16 + length
                }
            }
        }
    }
#endif
