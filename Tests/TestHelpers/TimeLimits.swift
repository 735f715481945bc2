import Foundation
public import Testing

/// A wait that did not end within its limit: a guard against a hang (a broken handshake), not
/// a timing. The wait has also recorded it as a test issue.
public struct TimedOut: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Yields until `condition` holds: for state another task reaches in a few steps (a request
/// joining an opening), where no callback exists to say so. Never sleeps, unless given
/// `polling`: then it looks again after that pause, for state another process reaches (a file
/// it creates), which is no reason to keep a core busy.
///
/// - Throws: ``TimedOut`` (recorded as an issue at the caller) when it still does not hold
///   after `timeout`, so a broken handshake fails the test instead of spinning for ever.
public func waitUntil(
    _ what: String = "the condition", timeout: Duration = .seconds(120), polling: Duration? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now >= deadline {
            let failure = TimedOut("\(what) did not hold within \(timeout)")
            Issue.record(Comment(rawValue: failure.description), sourceLocation: sourceLocation)
            throw failure
        }
        if let polling { try await Task.sleep(for: polling) } else { await Task.yield() }
    }
}

/// The result of `operation`, which must end within `timeout`; otherwise it is cancelled and
/// this throws ``TimedOut`` (recorded as an issue at the caller). Unlike a task group it
/// returns at the limit even when `operation` ignores cancellation (a continuation nobody
/// resumes), so a hang becomes a failure.
public func withTimeLimit<T: Sendable>(
    _ what: String = "the operation", timeout: Duration = .seconds(120),
    sourceLocation: SourceLocation = #_sourceLocation, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let pending = Protected<CheckedContinuation<T, any Error>?>(nil)
    let timer = Protected<Task<Void, Never>?>(nil)
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        pending.withLock { $0 = continuation }
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            timer.withLock { $0?.cancel() }
            pending.withLock { slot in defer { slot = nil }; return slot }?.resume(with: result)
        }
        let limit = Task {
            do { try await Task.sleep(for: timeout) } catch { return }  // cancelled: the work ended
            guard let waiting = pending.withLock({ slot in defer { slot = nil }; return slot }) else { return }
            work.cancel()
            let failure = TimedOut("\(what) did not end within \(timeout)")
            Issue.record(Comment(rawValue: failure.description), sourceLocation: sourceLocation)
            waiting.resume(throwing: failure)
        }
        timer.withLock { $0 = limit }
    }
}
