// Subprocesses (Process) exist on macOS and Linux only: not built for iOS, tvOS, watchOS or
// visionOS, where the tests that need this are not built either.
#if os(macOS) || os(Linux)

public import Foundation
public import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ways to make a file or directory unwritable that hold even for root, who ignores
/// permission bits: `chattr +i` (the immutable attribute) when running as root, `chmod`
/// otherwise.
public enum WriteProtection {
    public static let chattr = ["/usr/bin/chattr", "/bin/chattr"].first { FileManager.default.isExecutableFile(atPath: $0) }
    public static let isRoot = geteuid() == 0

    /// Whether protection really stops writes here, probed once on a scratch file.
    public static let isAvailable: Bool = {
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("rk-protect-probe-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: probe.path, contents: Data("x".utf8)) else { return false }
        defer {
            unprotect(probe)
            unlink(probe.path)
        }
        guard protect(probe) else { return false }
        let descriptor = open(probe.path, O_WRONLY | O_APPEND)
        if descriptor >= 0 {
            close(descriptor)
            return false
        }
        return true
    }()

    /// Why tests that need it are skipped when it is not available.
    public static var unavailableReason: Comment {
        "cannot make a file unwritable here: running as root without a working chattr (immutable attribute)"
    }

    /// Makes `url` (a file or a directory) unwritable; false when that failed.
    @discardableResult
    public static func protect(_ url: URL) -> Bool {
        if isRoot {
            guard let chattr else { return false }
            return run(chattr, ["+i", url.path]) == 0
        }
        return chmod(url.path, isDirectory(url) ? 0o500 : 0o400) == 0
    }

    /// Makes `url` writable by its owner again.
    public static func unprotect(_ url: URL) {
        if isRoot, let chattr { _ = run(chattr, ["-i", url.path]) }
        chmod(url.path, isDirectory(url) ? 0o700 : 0o600)
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var flag: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &flag) && flag.boolValue
    }

    /// Runs `chattr`; its exit status, or -1 when it could not be started.
    private static func run(_ path: String, _ arguments: [String]) -> Int32 {
        do {
            return try ChildProcess.runBriefCommand(URL(fileURLWithPath: path), arguments, in: FileManager.default.temporaryDirectory).status
        } catch {
            return -1
        }
    }
}

#endif
