import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The advisory lock on `<store>-observers` that tells writers, in every process, whether any
/// change stream observes the store, so that only then do they pay for the change log.
///
/// - A store whose streams observe the file holds a *shared* `flock` on it for as long as it
///   has a stream, taken before the stream is positioned in the log.
/// - A write transaction, once it holds SQLite's write lock, tries an *exclusive* `flock`
///   without waiting. If it gets it, nobody observes: it writes no log rows and keeps the lock
///   until its commit or rollback ended, so a stream created meanwhile waits for that commit
///   and positions itself after it. If it does not get it (a stream exists, or the lock file
///   cannot be opened), it logs every change.
///
/// `flock` locks belong to an open file description, so two stores in one process exclude each
/// other like two processes do, and the kernel drops a crashed process's locks. The file is
/// empty and created `0600` beside the store; it is never deleted (another process may hold it).
final class ObserverLock {
    private let descriptor: Int32
    let path: String

    /// Opens (creating if needed) the lock file of the store at `storePath`. An existing file
    /// this process may not write (read-only media, another user's store) is opened read-only:
    /// `flock` needs no write access.
    init(storePath: String) throws(ObserverLockFailure) {
        path = storePath + "-observers"
        var descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if descriptor < 0, [EACCES, EPERM, EROFS].contains(errno) {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard descriptor >= 0 else { throw ObserverLockFailure(path: path, errno: errno) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// For writers: true, holding the lock exclusively until ``release()``, when no stream
    /// observes the store now. Never waits.
    func lockIfUnobserved() -> Bool {
        flock(descriptor, LOCK_EX | LOCK_NB) == 0
    }

    /// For observers: takes the shared lock, waiting for a write that runs unlogged to end.
    func lockShared() throws(ObserverLockFailure) {
        while flock(descriptor, LOCK_SH) != 0 {
            guard errno == EINTR else { throw ObserverLockFailure(path: path, errno: errno) }
        }
    }

    func release() {
        flock(descriptor, LOCK_UN)
    }
}

/// Opening or locking `<store>-observers` failed.
struct ObserverLockFailure: Error {
    let path: String
    let errno: Int32

    var storeError: RecordStoreError {
        RecordStoreError(
            code: .cannotOpen, operation: .changes, path: path,
            detail: "the observers' lock file failed: \(String(cString: strerror(errno))); writers that cannot see this stream do not log their changes for it")
    }
}
