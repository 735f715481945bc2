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
    /// beside it (by path, the same file by inode, or, for one that does not exist yet, its
    /// name in the store's directory however the directory is spelled); nil for any other
    /// path. A store path that is a link to the store file counts as the file it names, whose
    /// side files are beside it (not beside the link). A copy written over one of them loses the store's data, and
    /// one written as a `-journal` or `-wal` not there yet could be taken for the store's own
    /// by SQLite, however the destination was named.
    package static func storeFile(_ path: String, storePath: String) -> String? {
        // The file the store uses: a link's target, whose side files are beside it.
        let file = StoreOpener.followingLinks(storePath)
        let name = lastComponent(path)
        let sameDirectory = isSameFile(directory(of: path), directory(of: file))
        for suffix in ["", "-wal", "-shm", "-journal", "-observers"]
        where path == file + suffix || isSameFile(path, file + suffix) || (sameDirectory && name == lastComponent(file) + suffix)
            || (suffix.isEmpty && path == storePath)
        {
            return suffix.isEmpty ? "file" : "\(suffix) file"
        }
        return nil
    }

    /// The last component of `path` ("records.sqlite" of "a/records.sqlite").
    private static func lastComponent(_ path: String) -> Substring {
        guard let slash = path.lastIndex(of: "/") else { return Substring(path) }
        return path[path.index(after: slash)...]
    }

    /// The directory of `path`: "." for a bare name, "/" for a name at the root.
    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Whether both paths name the same existing file (device and inode, links followed).
    package static func isSameFile(_ first: String, _ second: String) -> Bool {
        var a = stat()
        var b = stat()
        guard stat(first, &a) == 0, stat(second, &b) == 0 else { return false }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }
}
