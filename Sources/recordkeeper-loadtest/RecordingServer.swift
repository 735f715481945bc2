import Foundation
import HarnessSupport
import RecordKeeper

/// What one device sent and was answered, as seen on its side of the wire.
struct SentOperation: Sendable {
    var device: String
    var sequence: Int64
    /// Each change's key, base and whether it was a deletion.
    var changes: [(key: String, base: Int64?, deletion: Bool)]
    /// Every result received for it (several after lost answers: redeliveries).
    var results: [SyncResult] = []
    /// How many times it was sent.
    var sends = 0
}

/// A ``RecordSyncServer`` between one device's ``RecordSync`` and its relay client that writes
/// down every operation pushed and every outcome answered, so the end of the run can match the
/// device's operations against the server's outcomes table one by one.
///
/// `server` is asked each call, so a relay moved to another port could be swapped in.
final class RecordingServer: RecordSyncServer {
    private let server: @Sendable () -> any RecordSyncServer
    private let sent = Locked([UUID: SentOperation]())
    /// Pushes and pulls that failed with `.unreachable`.
    let unreachable = Locked(0)

    init(_ server: @escaping @Sendable () -> any RecordSyncServer) {
        self.server = server
    }

    var operations: [UUID: SentOperation] { sent.withLock { $0 } }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        sent.withLock { sent in
            for operation in operations {
                var entry = sent[operation.id] ?? SentOperation(
                    device: operation.device, sequence: operation.sequence,
                    changes: operation.changes.map { ($0.key, $0.base?.rawValue, $0.value == .tombstone) })
                entry.sends += 1
                sent[operation.id] = entry
            }
        }
        let outcomes: [SyncOutcome]
        do {
            outcomes = try await server().push(space: space, operations: operations)
        } catch let error as SyncError where error.code == .unreachable {
            unreachable.withLock { $0 += 1 }
            throw error
        }
        sent.withLock { sent in
            for outcome in outcomes { sent[outcome.operationID]?.results.append(outcome.result) }
        }
        return outcomes
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await counted { try await server().pull(space: space, after: cursor, limit: limit) }
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        try await counted { try await server().pull(space: space, after: cursor, limit: limit, collections: collections) }
    }

    func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try await counted {
            try await server().pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
        }
    }

    private func counted<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as SyncError where error.code == .unreachable {
            unreachable.withLock { $0 += 1 }
            throw error
        }
    }
}
