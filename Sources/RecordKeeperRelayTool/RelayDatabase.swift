import Foundation
import RecordKeeperSync
import RecordKeeperCommandLine
import RecordKeeperPostgres

/// The database a command works on: one (`--database`), or a shard map (`--shard-map FILE`).
enum RelayDatabase {
    case single(conninfo: String)
    case sharded(SyncShardMap, file: String)

    /// Reads `--database` or `--shard-map` (an option given wins over the other's environment
    /// variable; both options at once are refused).
    static func choose(_ settings: RelaySettings) throws -> RelayDatabase {
        let command = settings.arguments.command ?? ""
        let database = settings.arguments.values["database"]
        let mapFile = settings.arguments.values["shard-map"]
        switch (database, mapFile) {
        case (_?, _?):
            throw UsageError(message: "give --database or --shard-map, not both", command: command)
        case (let conninfo?, nil):
            return .single(conninfo: conninfo)
        case (nil, let file?):
            return .sharded(try map(settings, file), file: file)
        case (nil, nil):
            if let file = settings.value("shard-map", environment: "RECORDKEEPER_RELAY_SHARD_MAP") {
                return .sharded(try map(settings, file), file: file)
            }
            guard let conninfo = settings.value("database", environment: "RECORDKEEPER_RELAY_DATABASE") else {
                throw UsageError(
                    message: "\(command) needs --database (or RECORDKEEPER_RELAY_DATABASE) or --shard-map "
                        + "(or RECORDKEEPER_RELAY_SHARD_MAP)", command: command)
            }
            return .single(conninfo: conninfo)
        }
    }

    /// The shard map in `file`; a map that cannot be used is a configuration failure naming
    /// the file and the problem.
    private static func map(_ settings: RelaySettings, _ file: String) throws -> SyncShardMap {
        let data = try settings.file(file, "shard map")
        do {
            return try SyncShardMap(json: data)
        } catch let error as SyncError {
            throw RelayToolError(.configuration, "\(file): \(error.message)")
        }
    }

    /// How many databases: 1, or the map's shards.
    var shardCount: Int {
        switch self {
        case .single: 1
        case .sharded(let map, _): map.shards.count
        }
    }

    /// Connects: one server, or one per shard (`connections` each), with `liveWake` (each
    /// shard's wake session on its `wake_conninfo`; `wakeConninfo`, `--wake-database`, is for
    /// one database only).
    func connect(
        connections: Int, liveWake: PostgresSyncServer.LiveWake = .default, wakeConninfo: String? = nil
    ) async throws -> any RelayBackend {
        switch self {
        case .single(let conninfo):
            return try await PostgresSyncServer.connect(
                conninfo, connections: connections, liveWake: liveWake, wakeConninfo: wakeConninfo)
        case .sharded(let map, _):
            if wakeConninfo != nil {
                throw UsageError(
                    message: "with --shard-map, give each shard's wake_conninfo in the map, not --wake-database",
                    command: "serve")
            }
            return try await ShardedPostgresSyncServer.connect(map, connections: connections, liveWake: liveWake)
        }
    }
}

/// What the relay's commands need of a server, one database or sharded.
protocol RelayBackend: SyncCompactingServer {
    /// Every server connection (for session settings and health checks).
    var shardServers: [PostgresSyncServer] { get }
    func compact(space: String, olderThan age: Duration, batch: Int) async throws -> SyncCompaction
    func compactAll(olderThan age: Duration, batch: Int) async throws -> [SyncCompaction]
    /// Whether a push ever reached `space` (on its shard).
    func holds(space: String) async throws -> Bool
}

extension PostgresSyncServer: RelayBackend {
    var shardServers: [PostgresSyncServer] { [self] }
}

extension ShardedPostgresSyncServer: RelayBackend {
    var shardServers: [PostgresSyncServer] { servers }

    func holds(space: String) async throws -> Bool {
        try await server(for: space).holds(space: space)
    }
}
