internal import CLibPQ
import Foundation

extension PostgresConnection {
    /// Waits for notifications (`NOTIFY`, `pg_notify`) of the channels this session listens to
    /// (`LISTEN`, run before with ``execute(_:_:operation:resultFormat:)``), and returns the
    /// payloads of those received, oldest first, once at least one has arrived or `deadline`
    /// has passed (then possibly none). Notifications that arrived beside earlier statements
    /// are returned at once.
    ///
    /// The wait polls the socket like every statement's (``wait(socket:for:deadline:wake:)``):
    /// it holds the connection's own queue, never a cooperative thread, and ends at once when
    /// the task is cancelled (through ``cancelRunningStatement()``, which a task cancellation
    /// handler calls).
    ///
    /// ```swift
    /// try await connection.execute("LISTEN recordkeeper_sync")
    /// let payloads = try await withTaskCancellationHandler {
    ///     try await connection.notifications(until: .now + .seconds(30))
    /// } onCancel: { connection.cancelRunningStatement() }
    /// ```
    ///
    /// - Throws: ``PostgresError``: of kind ``PostgresError/Kind/connection`` when the session
    ///   is lost (the server ended it, a dead peer): the next statement connects again, and
    ///   the channels must be listened to again; ``PostgresError/Kind/cancelled`` when the task
    ///   was cancelled.
    package func notifications(until deadline: ContinuousClock.Instant?) throws(PostgresError) -> [String] {
        let operation = "wait for notifications"
        guard let connection = handle, !needsReset, PQstatus(connection) == CONNECTION_OK else {
            needsReset = true
            throw PostgresError(.connection, operation: operation, message: "the listening session is not connected")
        }
        running.wake.drain()
        while true {
            var payloads: [String] = []
            while let notification = PQnotifies(connection) {
                payloads.append(String(cString: notification.pointee.extra))
                PQfreemem(notification)
            }
            if !payloads.isEmpty { return payloads }
            switch Self.wait(socket: PQsocket(connection), for: Int16(POLLIN), deadline: deadline, running: running) {
            case .ready:
                if PQconsumeInput(connection) == 0 || PQstatus(connection) != CONNECTION_OK {
                    needsReset = true
                    throw PostgresError(.connection, operation: operation, message: Self.message(of: connection))
                }
            case .timedOut:
                return []
            case .cancelled:
                throw PostgresError(.cancelled, operation: operation, message: "the task was cancelled")
            }
        }
    }
}
