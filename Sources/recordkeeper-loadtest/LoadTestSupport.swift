import Foundation
import HarnessSupport

/// A wake-up that is never lost: ``raise()`` before ``wait()`` makes the next wait return at
/// once. One waiter at a time (each device's sync loop owns one). A cancelled wait returns.
final class Signal: Sendable {
    private struct State {
        var raised = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Locked(State())

    func raise() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.raised = true
            return nil
        }
        waiter?.resume()
    }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.raised || Task.isCancelled {
                        state.raised = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

/// One holder at a time, in arrival order: a device's sync calls and a collision's set-up
/// take it, so a collision's two writes happen while neither device pushes or pulls.
actor AsyncLock {
    private var held = false
    private var queue: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !held {
            held = true
            return
        }
        await withCheckedContinuation { queue.append($0) }
    }

    func release() {
        if queue.isEmpty {
            held = false
        } else {
            queue.removeFirst().resume()
        }
    }

    /// Runs `body` holding the lock.
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }
}

/// Messages to standard error, one line each.
func say(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// A failure of the harness itself (not a finding about the system under test).
struct LoadTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
