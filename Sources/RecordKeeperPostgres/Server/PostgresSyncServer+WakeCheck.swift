import Foundation
import RecordKeeperSync

extension PostgresSyncServer {
    /// With the `LISTEN` wake (``LiveWake/listen``), checks that a session opened as the wake
    /// session is opened hears a notification committed through this server's connections,
    /// within `within`; with the polling wake, does nothing.
    ///
    /// A PgBouncer in transaction mode between the wake session and PostgreSQL delivers no
    /// notification: held live pulls would then wait out their whole wait. `recordkeeper-relay
    /// serve` runs this before it listens, and refuses to start instead (docs/SCALING.md).
    ///
    /// - Throws: ``RecordKeeper/SyncError/Code/configuration`` when nothing was heard in time;
    ///   what connecting or the statements throw (``syncError(_:_:)``).
    public func checkLiveWake(within: Duration = .seconds(5)) async throws {
        guard case .listen = wake.mode else { return }
        let channel = "recordkeeper_sync_probe"
        let payload = UUID().uuidString
        let probe: PostgresConnection
        do {
            probe = try await PostgresConnection(conninfo: wake.conninfo)
            _ = try await probe.withTimeout(timeout) {
                try $0.execute("LISTEN recordkeeper_sync_probe", operation: "check the wake session: listen")
            }
        } catch {
            throw Self.failure(error, "check the wake session")
        }
        do {
            _ = try await withConnection { connection in
                try await connection.withTimeout(timeout) {
                    try $0.execute(
                        "SELECT pg_notify($1, $2)", [.text(channel), .text(payload)],
                        operation: "check the wake session: notify")
                }
            }
            let deadline = ContinuousClock.now + within
            while ContinuousClock.now < deadline {
                let heard = try await withTaskCancellationHandler {
                    try await probe.notifications(until: deadline)
                } onCancel: {
                    probe.cancelRunningStatement()
                }
                if heard.contains(payload) { return }
            }
        } catch {
            throw Self.failure(error, "check the wake session")
        }
        throw SyncError(
            .configuration,
            "the LISTEN wake session did not hear a notification committed through the server's connections within "
                + "\(within): a PgBouncer in transaction mode between it and PostgreSQL delivers none, and held live pulls "
                + "would wait out their whole wait. Give the wake session a direct connection to PostgreSQL "
                + "(--wake-database), or wake by polling (--live-wake poll)")
    }
}
