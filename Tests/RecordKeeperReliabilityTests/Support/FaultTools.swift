import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small tmpfs mounted for one test, so a full disk is a real ENOSPC (root only).
enum SmallFilesystem {
    static let mount = ["/usr/bin/mount", "/bin/mount"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let umount = ["/usr/bin/umount", "/bin/umount"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Whether a tmpfs can be mounted here, probed once.
    static let isAvailable: Bool = {
        guard geteuid() == 0, mount != nil, umount != nil else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("rk-mount-probe-\(UUID().uuidString)")
        do { try FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true) } catch { return false }
        defer { rmdir(probe.path) }
        guard attach(at: probe, megabytes: 1) else { return false }
        detach(probe)
        return true
    }()

    @discardableResult
    static func attach(at directory: URL, megabytes: Int) -> Bool {
        guard let mount else { return false }
        return runCommand(mount, ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", directory.path]) == 0
    }

    static func resize(_ directory: URL, megabytes: Int) -> Bool {
        guard let mount else { return false }
        return runCommand(mount, ["-o", "remount,size=\(megabytes)m", directory.path]) == 0
    }

    /// Remounts the filesystem read-only (`readOnly`) or read-write again: read-only media.
    @discardableResult
    /// Remounts the filesystem read-only or writable, tried again for up to 5 s while busy (as
    /// `detach` is: a remount read-only fails while a file is open for writing on it, and in
    /// the parallel run a child process of another test between spawn and exec can hold one).
    /// Past that, the issue names what this process still holds open on it.
    static func remount(_ directory: URL, readOnly: Bool) -> Bool {
        guard let mount else { return false }
        if whileBusy({ runCommand(mount, ["-o", readOnly ? "remount,ro" : "remount,rw", directory.path]) == 0 }) { return true }
        Issue.record("could not remount the test filesystem at \(directory.path); open here: \(openDescriptors(under: directory.path))")
        return false
    }

    /// Unmounts the filesystem. A busy mount (EBUSY) is tried again for up to 5 s: in the
    /// parallel sanitized run it was busy once right after the test's store had closed (not
    /// reproduced alone; a child process of another test between spawn and exec, or a
    /// descriptor closed a moment later, would do it). Past that, the issue names what this
    /// process still holds open on it, so a descriptor the library leaks still fails the test.
    static func detach(_ directory: URL) {
        guard let umount else { return }
        if whileBusy({ runCommand(umount, [directory.path]) == 0 }) { return }
        Issue.record("could not unmount the test filesystem at \(directory.path); open here: \(openDescriptors(under: directory.path))")
    }

    /// Runs `attempt` until it succeeds, at most 100 times 50 ms apart.
    private static func whileBusy(_ attempt: () -> Bool) -> Bool {
        for _ in 0..<100 {
            if attempt() { return true }
            usleep(50_000)
        }
        return false
    }

    /// This process's descriptors whose targets lie under `path` (Linux: /proc/self/fd).
    private static func openDescriptors(under path: String) -> [String] {
        #if os(Linux)
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return fds.compactMap { fd in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
                    target.hasPrefix(path) else { return nil }
                return "\(fd) -> \(target)"
            }
        #else
            return []
        #endif
    }
}

/// Counts the faults a suite injected, for docs/RELIABILITY.md.
final class FaultTally: @unchecked Sendable {
    // Guarded by `lock`; tests of one suite run in parallel.
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    static let shared = FaultTally()

    func add(_ kind: String, _ count: Int = 1) {
        lock.lock()
        counts[kind, default: 0] += count
        let total = counts.values.reduce(0, +)
        lock.unlock()
        reportFigure("faults: \(kind) +\(count) (suite total so far \(total))")
    }
}
