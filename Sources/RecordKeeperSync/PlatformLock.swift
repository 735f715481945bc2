#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A mutex: a `pthread_mutex_t` at a fixed address (it must never move, so it lives in memory
/// of its own, not in a Swift property). The lock of ``Protected`` and ``DatabaseExecutor``.
///
/// Not `NSLock`: every store creates several locks when it is made, and the first `NSLock` of
/// a process cost 7–18 µs of Foundation's class set-up, against 1.4 µs for this one, on the
/// 2-core VM of docs/PERFORMANCE.md, where a cold open to a first read (W5) takes about 1 ms.
/// Locking and unlocking are the same `pthread_mutex_lock`/`unlock` calls `NSLock` makes.
///
/// `@unchecked Sendable`: the mutex is made for use from many threads; `pointer` itself never
/// changes.
@usableFromInline
package final class PlatformLock: @unchecked Sendable {
    private let pointer: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: pthread_mutex_t())
        let code = pthread_mutex_init(pointer, nil)
        precondition(code == 0, "pthread_mutex_init failed with \(code)")
    }

    deinit {
        pthread_mutex_destroy(pointer)
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    /// Waits for the mutex, then holds it.
    package func lock() {
        let code = pthread_mutex_lock(pointer)
        precondition(code == 0, "pthread_mutex_lock failed with \(code)")
    }

    /// Takes the mutex if it is free now; false (without waiting) when another thread holds it.
    package func tryLock() -> Bool {
        pthread_mutex_trylock(pointer) == 0
    }

    package func unlock() {
        let code = pthread_mutex_unlock(pointer)
        precondition(code == 0, "pthread_mutex_unlock failed with \(code)")
    }
}
