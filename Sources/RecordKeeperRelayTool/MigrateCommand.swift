import RecordKeeper
import RecordKeeperPostgres

/// `recordkeeper-relay migrate --database CONNINFO`: creates or migrates the sync schema.
enum MigrateCommand {
    static func run(_ settings: RelaySettings) async throws -> RelayExitCode {
        let conninfo = try settings.required("database", environment: "RECORDKEEPER_RELAY_DATABASE")
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection(conninfo: conninfo)
        } catch {
            throw RelayToolError(error.kind == .invalidArgument ? .usage : .unavailable, "cannot connect: \(error.message)")
        }
        let applied = try await PostgresSyncSchema.migrate(connection)
        let version = try await PostgresSyncSchema.version(connection)
        if applied.isEmpty {
            StandardStreams.write("the sync schema is at version \(version); nothing to migrate\n")
        } else {
            let steps = applied.map(String.init).joined(separator: ", ")
            StandardStreams.write("the sync schema is at version \(version) (applied \(steps))\n")
        }
        return .ok
    }
}
