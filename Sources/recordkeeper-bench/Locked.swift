import Foundation

/// A value behind a lock. (Synchronization's `Mutex` needs macOS 15 / iOS 18; the package
/// supports macOS 14.)
///
/// `@unchecked Sendable`: `value` is only reached inside `withLock`, with `lock` held.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
