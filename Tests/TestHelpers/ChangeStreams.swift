public import RecordKeeper
import Testing

/// Reads `stream` until the merged elements satisfy `done`, failing after `timeout`.
/// (A guard against a hang, not a timing: the handshake is the element itself.)
public func changes(
    of stream: AsyncStream<RecordChanges>, timeout: Duration = .seconds(120),
    until done: @escaping @Sendable (RecordChanges) -> Bool
) async throws -> RecordChanges {
    try await withHangGuard(timeout, "no change arrived within \(timeout)") {
        var merged = RecordChanges()
        var iterator = stream.makeAsyncIterator()
        while !done(merged), let next = await iterator.next() { merged.merge(next) }
        return merged
    }
}

/// The first element of `sequence`, failing after `timeout` (a hang guard, not a timing) or
/// when the sequence ends first.
public func firstElement<S>(
    of sequence: S, timeout: Duration = .seconds(120)
) async throws -> S.Element where S: AsyncSequence & Sendable, S.Element: Sendable {
    let first = try await withHangGuard(timeout, "no element arrived within \(timeout)") { () async throws -> S.Element? in
        var iterator = sequence.makeAsyncIterator()
        return try await iterator.next()
    }
    guard let first else {
        Issue.record("the sequence ended before its first element")
        throw CancellationError()
    }
    return first
}

/// The value of `body`, or a recorded issue (`message`) and `CancellationError` when it takes
/// longer than `timeout`.
private func withHangGuard<T: Sendable>(
    _ timeout: Duration, _ message: @autoclosure () -> String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let result = try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
    guard let result else {
        Issue.record(Comment(rawValue: message()))
        throw CancellationError()
    }
    return result
}
