public import RecordKeeper

/// A server that answers pulls by collection with every collection's changes, as a server or
/// relay older than pulls by collection does (a relay ignores `collections=`): clients must
/// trim or refuse its pages, never hand them on.
public struct UnfilteredPulls: RecordSyncServer {
    public let inner: any RecordSyncServer

    public init(inner: any RecordSyncServer) {
        self.inner = inner
    }

    public func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    public func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await inner.pull(space: space, after: cursor, limit: limit)
    }

    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?
    ) async throws -> SyncPage {
        try await inner.pull(space: space, after: cursor, limit: limit)
    }
}
