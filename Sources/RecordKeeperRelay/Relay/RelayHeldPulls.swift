import Foundation
import RecordKeeperSync

/// The live pulls a relay holds now (`GET /v1/pull?wait=S`), so that a graceful shutdown can
/// answer them at once instead of waiting up to their wait: each runs in a task of its own,
/// which ``drain()`` cancels, and its handler answers the empty page a deadline would have.
///
/// The waiting itself is the sync server's (``RecordKeeper/RecordSyncServer/pull(space:after:limit:collections:wait:)``);
/// this only tracks and ends the tasks.
final class RelayHeldPulls: Sendable {
    private struct State: Sendable {
        var draining = false
        var next = 0
        var tasks: [Int: Task<SyncPage, any Error>] = [:]
    }

    private let state = Protected(State())

    /// Live pulls held now.
    var count: Int { state.withLock { $0.tasks.count } }

    /// Whether ``drain()`` was called.
    var isDraining: Bool { state.withLock { $0.draining } }

    /// Runs `pull` as a held pull: `nil` when the relay drains (already, or while it is held),
    /// meaning "answer an empty page"; its error otherwise.
    func hold(_ pull: @escaping @Sendable () async throws -> SyncPage) async throws -> SyncPage? {
        let task = Task { try await pull() }
        let id: Int? = state.withLock { state in
            guard !state.draining else { return nil }
            state.next += 1
            state.tasks[state.next] = task
            return state.next
        }
        guard let id else {
            task.cancel()
            return nil
        }
        defer { _ = state.withLock { $0.tasks.removeValue(forKey: id) } }
        do {
            return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        } catch is CancellationError where isDraining && !Task.isCancelled {
            return nil
        }
    }

    /// Ends every held pull now and every one that comes later (the relay shuts down).
    func drain() {
        let tasks = state.withLock { state in
            state.draining = true
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
    }
}
