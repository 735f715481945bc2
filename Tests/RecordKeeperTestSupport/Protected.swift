import Foundation

/// A `Sendable` value guarded by a lock, for test state reached from several tasks.
///
/// The value must itself be `Sendable`: what `withLock` hands out may leave the lock, and a
/// non-`Sendable` value (a class with mutable state) would then be shared unprotected.
///
/// `@unchecked Sendable` because every access to `value` goes through `lock`, so no two threads
/// ever touch it at once. (Synchronization's `Mutex` needs macOS 15 / iOS 18; this runs earlier.)
public final class Protected<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Counts calls from any task.
public final class Counter: Sendable {
    private let value = Protected(0)

    public init() {}

    /// Adds one and returns the new count.
    @discardableResult
    public func increment() -> Int { value.withLock { $0 += 1; return $0 } }

    public var count: Int { value.withLock { $0 } }
}
