import Foundation
public import HarnessSupport

/// A `Sendable` value guarded by a lock, for test state reached from several tasks: the
/// harnesses' ``HarnessSupport/Locked``, under the name the tests use.
public typealias Protected<Value: Sendable> = Locked<Value>

/// Counts calls from any task.
public final class Counter: Sendable {
    private let value = Protected(0)

    public init() {}

    /// Adds one and returns the new count.
    @discardableResult
    public func increment() -> Int { value.withLock { $0 += 1; return $0 } }

    public var count: Int { value.withLock { $0 } }
}
