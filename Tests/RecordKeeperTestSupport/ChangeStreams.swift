public import RecordKeeper
import Testing

/// Reads `stream` until the merged elements satisfy `done`, failing after `timeout`.
/// (A guard against a hang, not a timing: the handshake is the element itself.)
public func changes(
    of stream: AsyncStream<RecordChanges>, timeout: Duration = .seconds(120),
    until done: @escaping @Sendable (RecordChanges) -> Bool
) async throws -> RecordChanges {
    try await withThrowingTaskGroup(of: RecordChanges?.self) { group in
        group.addTask {
            var merged = RecordChanges()
            var iterator = stream.makeAsyncIterator()
            while !done(merged), let next = await iterator.next() { merged.merge(next) }
            return merged
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let merged = first else {
            Issue.record("no change arrived within \(timeout)")
            throw CancellationError()
        }
        return merged
    }
}

/// The first element of `sequence`, failing after `timeout` (a hang guard, not a timing) or
/// when the sequence ends first.
public func firstElement<S>(
    of sequence: S, timeout: Duration = .seconds(120)
) async throws -> S.Element where S: AsyncSequence & Sendable, S.Element: Sendable {
    try await withThrowingTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            var iterator = sequence.makeAsyncIterator()
            return try await iterator.next()
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let element = first else {
            Issue.record("no element arrived within \(timeout), or the sequence ended")
            throw CancellationError()
        }
        return element
    }
}
