#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Flushes a file (or a directory, after a rename in it) to stable storage: every sync of a
/// file the library writes itself (snapshot cache, backups, the tool's exports) goes through
/// here. SQLite syncs its own files, as `Durability` configures it.
///
/// - Apple platforms: `fcntl(F_FULLFSYNC)`. There `fsync` hands the data to the drive, which
///   may keep it in its volatile cache and write it later, in any order: a power loss can lose
///   it, or a rename can reach the disk before the file's data. `F_FULLFSYNC` asks the drive to
///   flush its cache. File systems that do not implement it (some network and FAT volumes)
///   refuse it; then `fsync`, which is what they offer (SQLite's own fallback too).
/// - Elsewhere (Linux): `fsync`, which already flushes the drive's cache on file systems
///   mounted with barriers (the default).
package enum FileSync {
    /// True where a sync is `F_FULLFSYNC` (Apple platforms).
    package static var isFullFsync: Bool {
        #if canImport(Darwin)
            true
        #else
            false
        #endif
    }

    /// Syncs the open file `descriptor`. False on failure, with `errno` set.
    package static func synchronize(_ descriptor: Int32) -> Bool {
        #if canImport(Darwin)
            if fcntl(descriptor, F_FULLFSYNC) == 0 { return true }
        #endif
        while fsync(descriptor) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
    }

    /// Syncs the directory at `path`, so that a rename or an unlink in it is durable. False on
    /// failure (it cannot be opened or synced), with `errno` set.
    package static func synchronizeDirectory(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        let synced = synchronize(descriptor)
        let error = errno
        _ = close(descriptor)  // read-only: nothing to lose in its close
        errno = error
        return synced
    }
}
