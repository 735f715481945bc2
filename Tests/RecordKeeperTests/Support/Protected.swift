import Foundation

/// A value guarded by a lock, for test state reached from several tasks.
///
/// `@unchecked Sendable` because every access to `value` goes through `lock`, so no two threads
/// ever touch it at once. (Synchronization's `Mutex` needs macOS 15 / iOS 18; this runs earlier.)
final class Protected<Value>: @unchecked Sendable {
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
