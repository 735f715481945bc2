public import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fresh temporary directory for one test, removed when `body` returns or throws.
///
/// Before removing it, everything inside is made writable again (0700), so tests that take
/// permissions away still clean up. A directory that cannot be removed is recorded as a test
/// issue, never ignored.
///
/// It runs `body` on the caller's actor (`isolation`), so a `@MainActor` test can pass a body
/// that touches main-actor state.
public func withTemporaryDirectory<T>(
    isolation: isolated (any Actor)? = #isolation, _ body: (URL) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try await body(directory.url)
}

/// The synchronous form of ``withTemporaryDirectory(_:)-async``, for tests that run a tool
/// synchronously. Same directory naming and cleanup.
@_disfavoredOverload
public func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try body(directory.url)
}

/// One temporary directory and its cleanup: the single implementation behind both forms.
private struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("RecordKeeperTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func remove() {
        chmod(url.path, 0o700)
        if let enumerator = FileManager.default.enumerator(atPath: url.path) {
            for case let item as String in enumerator {
                chmod(url.appendingPathComponent(item).path, 0o700)
            }
        }
        // A connection that is still closing (a change stream's, a child process's) may delete
        // its `-wal`/`-shm` while the directory is being removed, which then fails on a file
        // that has just gone: try again, a few times, before reporting it.
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                try FileManager.default.removeItem(at: url)
                return
            } catch {
                lastError = error
                guard FileManager.default.fileExists(atPath: url.path) else { return }
            }
        }
        Issue.record("could not remove the temporary directory \(url.path): \(lastError.map { "\($0)" } ?? "")")
    }
}
