import RecordKeeperSync
import RecordKeeperPostgres
import RecordKeeperCommandLine

/// `recordkeeper-relay migrate --database CONNINFO | --shard-map FILE [--grant ROLE] [--step-timeout SECONDS]`: creates or
/// migrates the sync schema (of every shard, with a map), and grants a serving role its DML
/// rights.
enum MigrateCommand {
    static func run(_ settings: RelaySettings) async throws -> ExitCode {
        switch try RelayDatabase.choose(settings) {
        case .single(let conninfo):
            try await migrate(conninfo, shard: nil, settings)
        case .sharded(let map, _):
            for shard in map.shards { try await migrate(shard.conninfo, shard: shard.name, settings) }
        }
        return .ok
    }

    /// Migrates one database (a shard's, named in every line and message, when `shard` is set).
    private static func migrate(_ conninfo: String, shard: String?, _ settings: RelaySettings) async throws {
        let prefix = shard.map { "shard '\($0)': " } ?? ""
        // A step that builds an index over a large operations log (schema 6) can take longer
        // than a request's 30 s; it rolls back whole when it runs out, and is tried again.
        let stepTimeout = try settings.integer(
            "step-timeout", default: Int(PostgresSyncServer.defaultTimeout.components.seconds), in: 1...86_400)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection(conninfo: conninfo)
        } catch {
            // Settings libpq or the server refuses (a malformed conninfo, a database that does
            // not exist, a wrong password) are corrected, not waited out: 78, as for serve.
            let code: ExitCode =
                switch error.kind {
                case .invalidArgument: .usage
                case .configuration, .authentication: .configuration
                default: .unavailable
                }
            throw RelayToolError(code, "\(prefix)cannot connect: \(error.message)")
        }
        let applied: [Int64]
        let version: Int64
        do {
            applied = try await PostgresSyncSchema.migrate(connection, timeout: .seconds(stepTimeout))
            version = try await PostgresSyncSchema.version(connection)
        } catch let error as SyncError where shard != nil {
            throw SyncError(error.code, prefix + error.message, underlying: error.underlying)
        } catch let error as PostgresError where shard != nil {
            throw RelayToolError(
                error.isConnectionFailure ? .unavailable : .configuration, "\(prefix)cannot migrate: \(error.message)")
        }
        if applied.isEmpty {
            StandardStreams.write("\(prefix)the sync schema is at version \(version); nothing to migrate\n")
        } else {
            let steps = applied.map(String.init).joined(separator: ", ")
            StandardStreams.write("\(prefix)the sync schema is at version \(version) (applied \(steps))\n")
        }
        // Roles granted serving before get their rights on every table, also when this run
        // applied no step: a database an older version migrated may have left them without
        // the tables its steps added (schema 6's cursors), and every pull then failed.
        // Only a role that may grant on the tables renews (their owner); a failure is said and
        // does not stop the migration (nor, with a shard map, the shards after this one).
        do {
            let granted = try await PostgresSyncSchema.renewServingRoles(connection)
            if !granted.isEmpty {
                StandardStreams.write("\(prefix)renewed what serve needs for \(granted.joined(separator: ", "))\n")
            }
        } catch let error as PostgresError {
            StandardStreams.writeError(
                "recordkeeper-relay: \(prefix)the serving roles' rights were not renewed: \(error.message); "
                    + "run migrate as the tables' owner, or give --grant ROLE")
        }
        if let role = settings.value("grant") {
            do {
                try await PostgresSyncSchema.grantServing(to: role, connection)
            } catch let error as PostgresError {
                throw RelayToolError(.configuration, "\(prefix)cannot grant \(role) what serving needs: \(error.message)")
            }
            StandardStreams.write("\(prefix)granted \(role) what serve needs: DML rights on the sync tables, nothing to create\n")
        }
    }
}
