import TestHelpers
import Foundation
@testable import RecordKeeper

/// A clock tests move by hand; starts at a whole second after every real enqueue time.
final class TestClock: Sendable {
    private let current = Protected(Date(timeIntervalSince1970: 1_900_000_000))

    var now: Date { current.withLock { $0 } }
    var read: @Sendable () -> Date { { self.now } }

    func advance(_ duration: Duration) { current.withLock { $0 = $0.addingTimeInterval(duration.seconds) } }
    func advance(seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A transport that answers from a script per operation kind and records every delivery.
final class ScriptedTransport: OutboxTransport {
    enum Answer: Sendable {
        case deliver
        case retry(String, after: Duration?)
        case reject(String)
        /// The request never reached the server (`OutboxDeliveryFailure.unreachable`).
        case offline(String)
    }

    fileprivate let state = Protected<(answers: [String: [Answer]], log: [OutboxOperation], inFlightKeys: Set<String>, overlaps: Int)>(
        ([:], [], [], 0))
    /// Runs before each answer (a handshake point for tests).
    let hook: (@Sendable (OutboxOperation) async throws -> Void)?

    init(_ answers: [String: [Answer]] = [:], hook: (@Sendable (OutboxOperation) async throws -> Void)? = nil) {
        self.hook = hook
        state.withLock { $0.answers = answers }
    }

    /// Every delivery attempt, in the order they started.
    var attempts: [OutboxOperation] { state.withLock { $0.log } }
    /// Times two deliveries of one ordering key overlapped (must stay 0).
    var overlaps: Int { state.withLock { $0.overlaps } }

    func deliver(_ operation: OutboxOperation) async throws {
        let answer = state.withLock { state -> Answer in
            state.log.append(operation)
            if let key = operation.orderingKey, !state.inFlightKeys.insert(key).inserted { state.overlaps += 1 }
            guard var list = state.answers[operation.kind], !list.isEmpty else { return .deliver }
            let first = list.removeFirst()
            state.answers[operation.kind] = list
            return first
        }
        await Task.yield()
        defer {
            state.withLock { state in
                if let key = operation.orderingKey { state.inFlightKeys.remove(key) }
            }
        }
        if let hook { try await hook(operation) }
        switch answer {
        case .deliver: return
        case .retry(let message, let after): throw OutboxDeliveryFailure.retryable(message, retryAfter: after)
        case .reject(let message): throw OutboxDeliveryFailure.permanent(message)
        case .offline(let message): throw OutboxDeliveryFailure.unreachable(message)
        }
    }
}

extension OutboxProcessor {
    /// A processor with a test clock and jitter that always picks `jitter` of the way from d/2 to d.
    static func testing(
        _ store: RecordStore, _ transport: any OutboxTransport, clock: TestClock,
        policy: RetryPolicy = RetryPolicy(), jitter: Double = 1,
        lease: Duration = OutboxProcessor.leaseDuration,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { _ in throw CancellationError() }
    ) -> OutboxProcessor {
        OutboxProcessor(
            store: store, transport: transport, retryPolicy: policy, now: clock.read, lease: lease,
            random: { range in range.lowerBound + (range.upperBound - range.lowerBound) * jitter }, sleep: sleep)
    }
}

func message(_ kind: String = "test.op", _ text: String, key: String? = nil) -> OutboxMessage {
    OutboxMessage(kind: kind, payload: Data(text.utf8), orderingKey: key)
}

extension ScriptedTransport {
    /// Drops the remaining scripted answers: everything is delivered from now on.
    func answerEverythingForTesting() { state.withLock { $0.answers = [:] } }
}
