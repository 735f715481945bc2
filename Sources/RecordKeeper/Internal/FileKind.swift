#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What is at a path, for writers that replace a file by renaming a finished copy over it
/// (backups, the tool's exports): such a rename would turn a device, a FIFO or a symbolic
/// link into a regular file, and must never land on the store's own file.
package enum FileKind {
    /// What is at `path` when it is not a regular file ("a symbolic link", "a device", "a
    /// FIFO", "a socket", "a directory"); nil when nothing is there or it is a regular file.
    /// A symbolic link is reported as itself, not followed.
    package static func nonRegular(at path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return nonRegular(mode: info.st_mode)
    }

    /// What a file of `mode` (`st_mode`) is when it is not a regular file, as
    /// ``nonRegular(at:)`` says it; nil for a regular file.
    static func nonRegular(mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFLNK: return "a symbolic link"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFDIR: return "a directory"
        default: return "not a regular file"
        }
    }

    /// Which of the store's own files `path` is: "file" for the store file, "-wal file",
    /// "-shm file", "-journal file" or "-observers file" for the files SQLite and the store keep
    /// beside it (by path, or the same file by inode); nil for any other path. A copy written
    /// over one of them loses the store's data, however the destination was named.
    package static func storeFile(_ path: String, storePath: String) -> String? {
        for suffix in ["", "-wal", "-shm", "-journal", "-observers"]
        where path == storePath + suffix || isSameFile(path, storePath + suffix) {
            return suffix.isEmpty ? "file" : "\(suffix) file"
        }
        return nil
    }

    /// Whether both paths name the same existing file (device and inode, links followed).
    package static func isSameFile(_ first: String, _ second: String) -> Bool {
        var a = stat()
        var b = stat()
        guard stat(first, &a) == 0, stat(second, &b) == 0 else { return false }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }
}
