public import Foundation

/// A clock tests move by hand, for ages (compaction horizons) without sleeping.
public final class ManualClock: Sendable {
    private let current: Protected<Date>

    /// A clock at `start` (a fixed date by default, so runs are repeatable).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Protected(start)
    }

    /// The clock's time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward by `days` days.
    public func advance(days: Double) {
        current.withLock { $0 = $0.addingTimeInterval(days * 86_400) }
    }
}
