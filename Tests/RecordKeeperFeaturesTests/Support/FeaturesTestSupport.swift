import Foundation
import Observation
import Testing
@testable import RecordKeeper
import TestHelpers

struct Book: Codable, Identifiable, Equatable, Sendable {
    var id: String
    var title: String
}

/// What happened, in order, from any task.
actor EventLog {
    private(set) var events: [String] = []
    func append(_ event: String) { events.append(event) }
}

/// Hands out prepared results of a loading function, one per call, in order.
actor Answers<Value: Sendable> {
    private var results: [Result<Value, any Error>]
    private(set) var served = 0

    init(_ results: [Result<Value, any Error>]) { self.results = results }

    func next() -> Result<Value, any Error> {
        served += 1
        return results.removeFirst()
    }
}

/// Suspends until `condition` holds, re-checking whenever an observed property it reads
/// changes. A handshake on the model's own state: no sleeping, no polling.
@MainActor
func waitUntilObserved(_ condition: @escaping @MainActor () -> Bool) async {
    while !condition() {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            withObservationTracking {
                _ = condition()
            } onChange: {
                continuation.resume()
            }
        }
    }
}

/// A sequence that passes `base` through and opens `ended` when its iteration ends (the base
/// finished, threw, or the reading task was cancelled).
struct SignallingSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    typealias Element = Base.Element
    let base: Base
    let ended: Gate

    func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), ended: ended) }

    struct Iterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let ended: Gate

        mutating func next() async throws -> Base.Element? {
            do {
                guard let element = try await base.next() else {
                    await ended.open()
                    return nil
                }
                return element
            } catch {
                await ended.open()
                throw error
            }
        }
    }
}
