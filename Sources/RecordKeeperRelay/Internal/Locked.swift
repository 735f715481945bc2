import Foundation

/// A value guarded by a lock, reachable from the polling threads of the HTTP server, from
/// handler tasks and from callers of the relay's public API.
///
/// `@unchecked Sendable` because every access to `value` goes through `lock`, so no two threads
/// ever touch it at once; `Value` is `Sendable`, so nothing that leaves `withLock` is shared
/// unprotected. (Synchronization's `Mutex` needs macOS 15; the relay runs on macOS 14.)
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
