import Foundation
import RecordKeeperSync
import RecordKeeperCommandLine
import RecordKeeperPostgres

/// `recordkeeper-relay check --shard-map FILE`: whether the map leaves every existing space on
/// the shard that holds it; prints each one it would move and the overrides that pin them.
enum CheckCommand {
    static func run(_ settings: RelaySettings) async throws -> ExitCode {
        guard case .sharded(let map, let file) = try RelayDatabase.choose(settings) else {
            throw UsageError(message: "check needs --shard-map (one database has nothing to check)", command: "check")
        }
        let server = try await ShardedPostgresSyncServer.connect(map)
        let misplaced = try await server.misplacedSpaces()
        if misplaced.isEmpty {
            StandardStreams.write(
                "\(file): every space is on the shard the map routes it to (\(map.shards.count) shards, "
                    + "\(map.overrides.count) override(s))\n")
            return .ok
        }
        for space in misplaced { StandardStreams.write("misplaced: \(space)\n") }
        let overrides = map.overrides.merging(ShardedPostgresSyncServer.pinningOverrides(for: misplaced)) { _, pinned in pinned }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(overrides), as: UTF8.self)
        StandardStreams.write("overrides that keep them where they are: \(json)\n")
        throw RelayToolError(
            .dataError, "\(file): the map would move \(misplaced.count) existing space(s); serve refuses it")
    }
}
