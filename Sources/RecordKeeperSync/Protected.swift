/// A value behind a lock, reached only inside ``withLock(_:)``: the package's one wrapper for
/// state that several threads share. The store, sync, the PostgreSQL server and the relay all
/// use it (it lives in this module because all of them import it). Synchronization's `Mutex`
/// is the model; it needs macOS 15 / iOS 18, and the package supports earlier systems.
///
/// The value may be a class that is not `Sendable` (a store's connections): the rule is that
/// nothing reached through the value leaves the closure, so no two threads ever use it at once.
/// Results that leave are values (`Sendable` ones in practice).
///
/// ```swift
/// let waiters = Protected([Waiter]())
/// waiters.withLock { $0.append(waiter) }
/// ```
///
/// `@unchecked Sendable`: `value` is only reached inside `withLock` and `withLockIfAvailable`,
/// with `lock` held. This is the one place the package's lock-guarded state says so.
///
/// `@inlinable` (with its two fields `@usableFromInline`): the store's point reads and small
/// saves go through it on every request, from another module, where an opaque generic call
/// and the value witnesses of its result cost a point read about 0.2 µs (W4). The optimizer
/// does not take it up, though: the release build of 2026-12-02 calls the generic `withLock`
/// at all 424 of its call sites, and `@_alwaysEmitIntoClient` did not change that (see
/// docs/PERFORMANCE.md, "Later the same evening").
package final class Protected<Value>: @unchecked Sendable {
    @usableFromInline let lock = PlatformLock()
    @usableFromInline var value: Value

    @inlinable
    package init(_ value: sending Value) {
        self.value = value
    }

    /// Runs `body` with the value, waiting for the lock.
    @inlinable @inline(__always)
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Runs `body` with the value if the lock is free now; nil (without running it) otherwise.
    /// For requests that must never wait on the caller's thread.
    @inlinable @inline(__always)
    package func withLockIfAvailable<T>(_ body: (inout Value) throws -> T) rethrows -> T? {
        guard lock.tryLock() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
}
