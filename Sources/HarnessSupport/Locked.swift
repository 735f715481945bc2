import Foundation

/// A `Sendable` value behind a lock, for state reached from several tasks or threads in the
/// harnesses (tests, benchmark, load test, crash helper).
///
/// The value must itself be `Sendable`: what `withLock` hands out may leave the lock, and a
/// non-`Sendable` value (a class with mutable state) would then be shared unprotected.
///
/// `@unchecked Sendable`: `value` is only reached inside `withLock`, with `lock` held.
/// (Synchronization's `Mutex` needs macOS 15 / iOS 18; the package supports earlier.)
public final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
