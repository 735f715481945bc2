#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which file a path names: its device and inode.
///
/// SQLite keeps writing through its open descriptor when the store file is deleted, moved or
/// replaced, so commits would "succeed" into a file nobody can open again. The store records
/// the identity when it opens and compares it before each commit.
struct StoreFileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    enum Lookup: Equatable {
        /// The path names this file.
        case file(StoreFileIdentity)
        /// Nothing is at the path (deleted or moved away).
        case missing
        /// The path could not be examined (for example a directory that cannot be searched);
        /// nothing is known about the file.
        case unknown
    }

    /// What is at `path` now when it no longer names `opened` (another file, or none); nil
    /// while it does, or when the path cannot be examined (nothing is known then).
    static func replacement(of opened: StoreFileIdentity, at path: String) -> Lookup? {
        let current = lookup(path)
        return current == .file(opened) || current == .unknown ? nil : current
    }

    static func lookup(_ path: String) -> Lookup {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return errno == ENOENT || errno == ENOTDIR ? .missing : .unknown
        }
        return .file(StoreFileIdentity(info))
    }
}

extension StoreFileIdentity {
    /// The device and inode in `info`, as unsigned 64-bit numbers on every platform. `dev_t` is
    /// a signed 32-bit integer on Apple platforms (unsigned 64-bit on Linux) and may be
    /// negative there, which `UInt64(_:)` would trap on: its bits are kept instead
    /// (sign-extended, so two devices never compare equal by accident).
    init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}
