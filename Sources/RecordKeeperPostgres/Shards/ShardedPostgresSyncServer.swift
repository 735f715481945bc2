public import RecordKeeperSync

/// A ``RecordKeeper/RecordSyncServer`` over several PostgreSQL databases: each request goes to
/// the ``PostgresSyncServer`` of the shard its space belongs to (``SyncShardMap``). Spaces are
/// independent (a push or pull touches one space's rows only), so every guarantee of one space
/// (exactly once, compare-and-set, no skipped change) is its shard's.
///
/// ```swift
/// let map = try SyncShardMap(json: Data(contentsOf: URL(fileURLWithPath: "shards.json")))
/// let server = try await ShardedPostgresSyncServer.connect(map, connections: 4)
/// guard try await server.misplacedSpaces().isEmpty else { fatalError("the map moved spaces") }
/// let outcomes = try await server.push(space: "alice", operations: operations)
/// ```
///
/// Each shard's schema is checked (and migrated when behind) once, when it connects, never per
/// request; no request takes a lock beyond its own space's rows. The first request of each
/// space also makes sure no other shard holds the space (``route(_:)``).
public final class ShardedPostgresSyncServer: SyncCompactingServer, SyncPagesPulling {
    /// Where each space goes.
    public let map: SyncShardMap
    /// One server per shard, in the map's order.
    public let servers: [PostgresSyncServer]
    /// The spaces found on no other shard since this server started (see ``route(_:)``).
    let placed = PlacedSpaces()

    /// Routes over servers already connected, one per shard of `map`, in its order.
    ///
    /// - Throws: ``RecordKeeper/SyncError/Code/configuration`` when the counts differ.
    public init(map: SyncShardMap, servers: [PostgresSyncServer]) throws {
        guard servers.count == map.shards.count else {
            throw SyncError(
                .configuration, "the shard map lists \(map.shards.count) shards but \(servers.count) servers were given")
        }
        self.map = map
        self.servers = servers
    }

    /// Connects to every shard (each migrated forward, as
    /// ``PostgresSyncServer/connect(_:connections:timeout:liveWake:wakeConninfo:notices:)`` does),
    /// `connections` connections each; each shard's live pulls wake through `liveWake` on a
    /// session to the shard's ``SyncShardMap/Shard/wakeConninfo`` (its conninfo when nil).
    ///
    /// - Throws: the first shard's failure, as
    ///   ``PostgresSyncServer/connect(_:connections:timeout:liveWake:wakeConninfo:notices:)``
    ///   throws it, its message naming the shard; the shards connected before are closed.
    public static func connect(
        _ map: SyncShardMap, connections: Int = 1, timeout: Duration = PostgresSyncServer.defaultTimeout,
        liveWake: PostgresSyncServer.LiveWake = .default, notices: (@Sendable (PostgresNotice) -> Void)? = nil
    ) async throws -> ShardedPostgresSyncServer {
        var servers: [PostgresSyncServer] = []
        for shard in map.shards {
            do {
                servers.append(
                    try await PostgresSyncServer.connect(
                        shard.conninfo, connections: connections, timeout: timeout, liveWake: liveWake,
                        wakeConninfo: shard.wakeConninfo, notices: notices))
            } catch let error as SyncError {
                throw onShard(shard.name, error)
            }
        }
        return try ShardedPostgresSyncServer(map: map, servers: servers)
    }

    /// `error` with its message naming the shard it happened on.
    static func onShard(_ name: String, _ error: SyncError) -> SyncError {
        SyncError(error.code, "shard '\(name)': \(error.message)", underlying: error.underlying, retryAfter: error.retryAfter)
    }

    /// The server of the shard that holds `space`.
    public func server(for space: String) -> PostgresSyncServer {
        servers[map.shardIndex(for: space)]
    }

    // Each request is checked before it is routed (routing may ask other shards): bad input
    // is `invalidRequest`, as from one server, whatever the shards' state.

    public func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try SyncRequestValidation.validatePush(space: space, operations: operations)
        return try await route(space, writing: true).push(space: space, operations: operations)
    }

    public func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: nil)
        return try await route(space).pull(space: space, after: cursor, limit: limit)
    }

    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?
    ) async throws -> SyncPage {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        return try await route(space).pull(space: space, after: cursor, limit: limit, collections: collections)
    }

    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        try SyncRequestValidation.validateWait(wait)
        return try await route(space).pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
    }

    package func pullPages(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, pages: Int
    ) async throws -> [SyncPage] {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        return try await route(space).pullPages(space: space, after: cursor, limit: limit, collections: collections, pages: pages)
    }

    public func compact(space: String, olderThan age: Duration) async throws -> SyncCompaction {
        try await route(space).compact(space: space, olderThan: age)
    }

    /// Compacts `space` on its shard in deletion batches of `batch` rows (see
    /// ``PostgresSyncServer/compact(space:olderThan:batch:)``).
    ///
    /// - Throws: as ``PostgresSyncServer/compact(space:olderThan:batch:)``.
    public func compact(space: String, olderThan age: Duration, batch: Int) async throws -> SyncCompaction {
        try await route(space).compact(space: space, olderThan: age, batch: batch)
    }

    /// Compacts every space of every shard, shard after shard (see
    /// ``PostgresSyncServer/compactAll(olderThan:batch:)``).
    ///
    /// - Throws: ``SyncCompactionIncomplete`` naming every space that failed (the others of
    ///   every shard were compacted); as ``PostgresSyncServer/compactAll(olderThan:batch:)``
    ///   otherwise; what was compacted before stays compacted.
    public func compactAll(
        olderThan age: Duration, batch: Int = PostgresSyncServer.defaultCompactionBatch
    ) async throws -> [SyncCompaction] {
        var done: [SyncCompaction] = []
        var failures: [SyncCompactionIncomplete.Failure] = []
        for (index, server) in servers.enumerated() {
            do {
                done += try await server.compactAll(olderThan: age, batch: batch)
            } catch let incomplete as SyncCompactionIncomplete {
                done += incomplete.compacted
                failures += incomplete.failures.map { failure in
                    var named = failure
                    if failure.space.hasPrefix("(") { named.space = "\(failure.space.dropLast()) of shard '\(map.shards[index].name)')" }
                    return named
                }
            }
        }
        guard failures.isEmpty else { throw SyncCompactionIncomplete(compacted: done, failures: failures) }
        return done
    }
}
