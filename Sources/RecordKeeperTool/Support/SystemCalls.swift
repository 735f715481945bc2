#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX calls the tool makes, in one place so the platform imports stay here.
enum SystemCalls {
    static let standardInput: Int32 = 0
    static let standardOutput: Int32 = 1
    static let standardError: Int32 = 2

    static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    static func openForReading(_ path: String) -> Int32 {
        open(path, O_RDONLY | O_CLOEXEC)
    }

    static func createForWriting(_ path: String) -> Int32 {
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
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

    static func fileSync(_ descriptor: Int32) -> Bool {
        fsync(descriptor) == 0
    }

    /// Renames atomically, replacing `destination` if it exists.
    static func renameReplacing(_ source: String, _ destination: String) -> Bool {
        rename(source, destination) == 0
    }

    static func removeFile(_ path: String) -> Bool {
        unlink(path) == 0
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
