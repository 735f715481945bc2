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
    /// `@unchecked Sendable`: its source's handler runs on the watcher's queue, and `cancel` is
    /// called there.
    final class InotifyChangeSignal: StoreChangeSignal, @unchecked Sendable {
        private let source: any DispatchSourceRead

        /// Nil when inotify cannot watch the directory (it does not exist yet, the per-user
        /// watch limit is reached): the watcher then polls.
        init?(storePath: String, queue: DispatchQueue, wake: @escaping @Sendable () -> Void) {
            let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard descriptor >= 0 else { return nil }
            var directory = (storePath as NSString).deletingLastPathComponent
            if directory.isEmpty { directory = "." }
            let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
            guard inotify_add_watch(descriptor, directory, mask) >= 0 else {
                close(descriptor)
                return nil
            }
            let base = (storePath as NSString).lastPathComponent
            let names: Set<[UInt8]> = [Array(base.utf8), Array((base + "-wal").utf8)]
            source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            source.setEventHandler {
                if Self.drain(descriptor, names: names) { wake() }
            }
            source.setCancelHandler { close(descriptor) }
            source.resume()
        }

        func consumersWaiting(_ waiting: Bool) {}
        func checked(foundChange: Bool) {}
        func cancel() { source.cancel() }

        /// Reads every pending event; true when one concerns the store's files (or says that
        /// events were lost, or that the watch ended).
        private static func drain(_ descriptor: Int32, names: Set<[UInt8]>) -> Bool {
            var relevant = false
            let capacity = 16 * 1024
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let count = read(descriptor, buffer, capacity)
                if count < 0 {
                    if errno == EINTR { continue }
                    // EAGAIN: all read. Anything else: say "look", the check will tell.
                    if errno != EAGAIN { relevant = true }
                    return relevant
                }
                if count == 0 { return relevant }
                // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[len]; }
                var offset = 0
                while offset + 16 <= count {
                    let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    if mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                        relevant = true
                    } else if length > 0, offset + 16 + length <= count {
                        let name = UnsafeRawBufferPointer(start: buffer + offset + 16, count: length)
                        let bytes = Array(name.prefix { $0 != 0 })
                        if names.contains(bytes) { relevant = true }
                    }
                    offset += 16 + length
                }
            }
        }
    }
#endif
