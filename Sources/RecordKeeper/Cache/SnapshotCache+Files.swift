import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file system work of ``SnapshotCache``, in POSIX calls so that permissions, atomic
/// renames and "no such file" are exact. Every failure throws ``SnapshotCacheError``.
enum SnapshotFiles {
    /// The envelope version snapshot files are written in.
    static let currentFormat = 1

    /// Writes `data` to `directory/name` atomically: a new `0600` temporary file in the same
    /// directory, written, synced and closed, then renamed over the destination, then the
    /// directory synced. On failure before the rename the temporary file is removed and the
    /// previous snapshot is untouched.
    static func writeAtomically(
        _ data: Data, directory: String, name: String, key: String, protection: FileProtection = .systemDefault,
        beforeRename: (@Sendable (URL, URL) throws -> Void)?
    ) throws {
        let destination = directory + "/" + name
        func failure(_ detail: String, errno code: Int32? = nil, path: String? = nil, underlying: (any Error)? = nil)
            -> SnapshotCacheError
        {
            SnapshotCacheError(
                .cannotWrite, operation: "save", key: key, path: path ?? destination, systemError: code,
                underlying: underlying, detail: detail)
        }

        try ensureDirectory(directory, key: key, protection: protection)
        let temporary = directory + "/" + SnapshotCache.temporaryPrefix + UUID().uuidString
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw failure("cannot create a temporary file", errno: errno, path: temporary)
        }
        var isOpen = true
        var renamed = false
        defer {
            if isOpen { _ = close(descriptor) }  // only on a path that already throws
            // A temporary file left here after a failure would be harmless (loads ignore it,
            // removeAll removes it); the failure that brought us here is what is thrown.
            if !renamed { _ = unlink(temporary) }
        }
        guard fchmod(descriptor, 0o600) == 0 else { throw failure("cannot set permissions", errno: errno, path: temporary) }
        do {
            try protection.apply(to: temporary)
        } catch {
            throw failure("cannot set the file protection class \(protection)", path: temporary, underlying: error)
        }
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw failure("cannot write the temporary file", errno: errno, path: temporary)
                }
                offset += written
            }
        }
        guard FileSync.synchronize(descriptor) else { throw failure("cannot sync the temporary file", errno: errno, path: temporary) }
        isOpen = false
        guard close(descriptor) == 0 else { throw failure("cannot close the temporary file", errno: errno, path: temporary) }
        if let beforeRename {
            do {
                try beforeRename(URL(fileURLWithPath: temporary), URL(fileURLWithPath: destination))
            } catch {
                throw failure("interrupted before the rename", underlying: error)
            }
        }
        guard rename(temporary, destination) == 0 else {
            throw failure("cannot rename the temporary file over the snapshot", errno: errno)
        }
        renamed = true
        try syncDirectory(directory, key: key)
    }

    /// The bytes of the file at `path`, or nil when there is no such file (or no directory).
    static func readIfPresent(_ path: String, key: String) throws -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw SnapshotCacheError(
                .cannotRead, operation: "load", key: key, path: path, systemError: code,
                detail: "cannot open the snapshot file")
        }
        defer { _ = close(descriptor) }  // read-only descriptor: nothing to flush
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SnapshotCacheError(
                    .cannotRead, operation: "load", key: key, path: path, systemError: errno,
                    detail: "cannot read the snapshot file")
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return data
    }

    /// Removes the file at `path`: true when it did, false when there was none (not an error).
    @discardableResult
    static func remove(_ path: String, key: String?, operation: String) throws -> Bool {
        guard unlink(path) == 0 else {
            let code = errno
            if code == ENOENT { return false }
            throw SnapshotCacheError(
                .cannotRemove, operation: operation, key: key, path: path, systemError: code,
                detail: "cannot remove the snapshot file")
        }
        return true
    }

    /// Makes the removals in `directory` durable.
    static func syncDirectory(_ directory: String, key: String?, operation: String) throws {
        guard FileSync.synchronizeDirectory(directory) else {
            throw SnapshotCacheError(
                .cannotRemove, operation: operation, key: key, path: directory, systemError: errno,
                detail: "the snapshot was removed, but the directory could not be synced: after a power loss it could come back")
        }
    }

    /// The names of the snapshot and temporary files in `directory`; none when it does not
    /// exist.
    static func cacheFiles(in directory: String) throws -> [String] {
        var info = stat()
        if stat(directory, &info) != 0 {
            let code = errno
            if code == ENOENT { return [] }
            throw SnapshotCacheError(
                .cannotRead, operation: "removeAll", key: nil, path: directory, systemError: code,
                detail: "cannot examine the cache directory")
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw SnapshotCacheError(
                .cannotRead, operation: "removeAll", key: nil, path: directory, underlying: error,
                detail: "cannot list the cache directory")
        }
        return names.filter { name in
            name.hasPrefix(SnapshotCache.temporaryPrefix)
                || ((name.hasPrefix("k-") || name.hasPrefix("h-")) && name.hasSuffix(SnapshotCache.fileSuffix))
        }.sorted()
    }

    /// Creates `directory` (and missing parents) with `0700` if it does not exist; refuses a
    /// path that exists but is not a directory.
    private static func ensureDirectory(_ directory: String, key: String, protection: FileProtection) throws {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw SnapshotCacheError(
                    .cannotWrite, operation: "save", key: key, path: directory,
                    detail: "the cache directory path is not a directory")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: protection.directoryAttributes())
        } catch {
            throw SnapshotCacheError(
                .cannotWrite, operation: "save", key: key, path: directory, underlying: error,
                detail: "cannot create the cache directory")
        }
    }

    /// Makes the rename durable.
    private static func syncDirectory(_ directory: String, key: String) throws {
        guard FileSync.synchronizeDirectory(directory) else {
            throw SnapshotCacheError(
                .cannotWrite, operation: "save", key: key, path: directory, systemError: errno,
                detail: "the snapshot was renamed into place, but the directory could not be synced")
        }
    }
}
