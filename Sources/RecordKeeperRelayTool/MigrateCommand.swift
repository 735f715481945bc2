import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperCommandLine

/// `recordkeeper-relay migrate --database CONNINFO [--grant ROLE]`: creates or migrates the sync
/// schema, and grants a serving role its DML rights.
enum MigrateCommand {
    static func run(_ settings: RelaySettings) async throws -> ExitCode {
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
        if let role = settings.value("grant") {
            do {
                try await PostgresSyncSchema.grantServing(to: role, connection)
            } catch let error as PostgresError {
                throw RelayToolError(.configuration, "cannot grant \(role) what serving needs: \(error.message)")
            }
            StandardStreams.write("granted \(role) what serve needs: DML rights on the sync tables, nothing to create\n")
        }
        return .ok
    }
}
