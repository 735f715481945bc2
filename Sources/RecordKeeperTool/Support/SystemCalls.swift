#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

import RecordKeeper

/// The few POSIX calls the tool makes, in one place so the platform imports stay here.
enum SystemCalls {
    static let standardInput: Int32 = 0
    static let standardOutput: Int32 = 1
    static let standardError: Int32 = 2

    static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    /// Whether opening `path` again would not read the same bytes from the start: a pipe, a
    /// FIFO or a socket (`<(command)`, a `mkfifo` file), and a descriptor of this process
    /// (`/dev/stdin`, `/dev/fd/N`: on Darwin opening one shares the first open's position,
    /// even for a regular file). A regular file, a directory or a device is opened again (an
    /// endless device such as `/dev/zero` fails the first pass's parse at its first byte).
    static func readsOnce(_ path: String) -> Bool {
        if path == "/dev/stdin" || path.hasPrefix("/dev/fd/") { return true }
        #if os(Linux)
            if path.hasPrefix("/proc/self/fd/") { return true }
        #endif
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return info.st_mode & S_IFMT == S_IFIFO || info.st_mode & S_IFMT == S_IFSOCK
    }

    static func openForReading(_ path: String) -> Int32 {
        open(path, O_RDONLY | O_CLOEXEC)
    }

    /// Creates a new file for writing, readable by its owner only (0600), failing when
    /// anything (a file, a symbolic link) is at `path` already.
    static func createPrivate(_ path: String) -> Int32 {
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    }

    /// The permission bits of the file at `path`; nil when there is none.
    static func permissions(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// Sets the permission bits of an open file (exactly `mode`, whatever the umask).
    static func setPermissions(_ descriptor: Int32, _ mode: mode_t) -> Bool {
        fchmod(descriptor, mode) == 0
    }

    /// A new file for reading and writing that no other process can find: created 0600 in a
    /// private (0700) directory of the temporary directory, then unlinked with its directory
    /// at once, so it lives only as the returned descriptor and vanishes with the process,
    /// however it ends. Nil (see `lastErrorMessage`) when that fails; the message names the
    /// temporary directory.
    static func anonymousFile(in temporaryDirectory: String) -> (descriptor: Int32, failure: String?) {
        var template = Array((temporaryDirectory + "/recordkeeper-XXXXXX").utf8CString)
        let made: String? = template.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress, let made = mkdtemp(base) else { return nil }
            return String(cString: made)
        }
        guard let directory = made else {
            return (-1, "cannot create a private directory in \(temporaryDirectory): \(lastErrorMessage)")
        }
        let path = directory + "/input"
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        let openFailure = descriptor < 0 ? "cannot create a file in \(directory): \(lastErrorMessage)" : nil
        let unlinked = descriptor < 0 || unlink(path) == 0
        let unlinkFailure = unlinked ? nil : "cannot remove \(path): \(lastErrorMessage)"
        let removed = rmdir(directory) == 0
        let failure = openFailure ?? unlinkFailure ?? (removed ? nil : "cannot remove \(directory): \(lastErrorMessage)")
        if failure != nil, descriptor >= 0 { close(descriptor) }
        return failure == nil ? (descriptor, nil) : (-1, failure)
    }

    /// A second descriptor for the open file `descriptor`, positioned at its start.
    static func reopenFromStart(_ descriptor: Int32) -> Int32 {
        let copy = dup(descriptor)
        guard copy >= 0 else { return -1 }
        // dup shares the file position: seeking here moves the original too, which is what a
        // reader starting from the beginning wants.
        guard lseek(copy, 0, SEEK_SET) == 0 else {
            close(copy)
            return -1
        }
        return copy
    }

    /// Whether `path` can be opened for reading, without opening it (a FIFO stays unread).
    static func checkReadable(_ path: String) -> Int32? {
        var info = stat()
        guard stat(path, &info) == 0 else { return errno }
        return access(path, R_OK) == 0 ? nil : errno
    }

    static func closeDescriptor(_ descriptor: Int32) -> Int32 {
        close(descriptor)
    }

    /// Reads up to `count` bytes; retries on EINTR. Returns -1 on error (see `lastErrorMessage`).
    static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        while true {
            #if canImport(Darwin)
            let result = Darwin.read(descriptor, buffer, count)
            #elseif canImport(Musl)
            let result = Musl.read(descriptor, buffer, count)
            #else
            let result = Glibc.read(descriptor, buffer, count)
            #endif
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }

    /// Writes all bytes; retries on EINTR and short writes. Returns false on error.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard let base = bytes.baseAddress else { return true }
            #if canImport(Darwin)
            let written = Darwin.write(descriptor, base + offset, bytes.count - offset)
            #elseif canImport(Musl)
            let written = Musl.write(descriptor, base + offset, bytes.count - offset)
            #else
            let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
            #endif
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// `fcntl(F_FULLFSYNC)` on Apple platforms, `fsync` elsewhere (see `FileSync`).
    static func fileSync(_ descriptor: Int32) -> Bool {
        FileSync.synchronize(descriptor)
    }

    /// Renames atomically, replacing `destination` if it exists.
    static func renameReplacing(_ source: String, _ destination: String) -> Bool {
        rename(source, destination) == 0
    }

    static func removeFile(_ path: String) -> Bool {
        unlink(path) == 0
    }

    /// Removes an empty directory.
    static func removeDirectory(_ path: String) -> Bool {
        rmdir(path) == 0
    }

    /// Puts a new empty file with the same permissions (and, where allowed, owner) in place of
    /// the file at `path`, by renaming it over that file: a process that has the old file open
    /// sees it replaced, where emptying it in place would not. False with `errno` set when it
    /// could not (nothing is left behind then).
    static func replaceWithEmptyFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let directory = CreatedFiles.parent(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let temporary = (directory.isEmpty ? "" : directory + "/") + ".\(name).empty-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        // The owner is kept where this process may set it (root); otherwise it is this user's,
        // as it was when this user created the store.
        let failed = fchmod(descriptor, info.st_mode & 0o7777) != 0
            || (fchown(descriptor, info.st_uid, info.st_gid) != 0 && errno != EPERM)
            || rename(temporary, path) != 0
        let number = errno
        close(descriptor)
        if failed {
            unlink(temporary)
            errno = number
            return false
        }
        return true
    }

    /// The size of the file at `path`; nil when it cannot be examined.
    static func fileSize(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    static var lastErrorNumber: Int32 { errno }

    static var lastErrorMessage: String {
        String(cString: strerror(errno))
    }

    static func isNoSuchFile(_ number: Int32) -> Bool {
        number == ENOENT
    }

    static var processIdentifier: Int32 { getpid() }
}
