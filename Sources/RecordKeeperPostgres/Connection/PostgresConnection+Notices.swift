internal import CLibPQ

/// A notice or warning the server sent beside a statement's result (`RAISE NOTICE` in a
/// trigger, "there is no transaction in progress", a deprecation): not a failure of the
/// statement, which succeeded.
public struct PostgresNotice: Sendable, Equatable, CustomStringConvertible {
    /// `NOTICE`, `WARNING`, `INFO`, `LOG` or `DEBUG`.
    public let severity: String
    /// The server's primary message.
    public let message: String

    /// Creates a notice.
    public init(severity: String, message: String) {
        self.severity = severity
        self.message = message
    }

    /// "NOTICE: <message>".
    public var description: String { "\(severity): \(message)" }
}

/// Receives the notices of one connection, for libpq's notice receiver (`PQsetNoticeReceiver`).
/// Without it libpq writes them to the process's stderr itself, which a program cannot
/// format or redirect.
///
/// Kept alive by the connection's handle owner for as long as the libpq connection exists
/// (libpq keeps the receiver across `PQreset`). `Sendable`: `handler` is immutable.
final class NoticeReceiver: Sendable {
    let handler: (@Sendable (PostgresNotice) -> Void)?

    init(_ handler: (@Sendable (PostgresNotice) -> Void)?) {
        self.handler = handler
    }

    /// Routes the notices of `connection` to this receiver (dropped when it has no handler).
    func install(on connection: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        PQsetNoticeReceiver(connection, { context, result in
            guard let context, let result else { return }
            let receiver = Unmanaged<NoticeReceiver>.fromOpaque(context).takeUnretainedValue()
            guard let handler = receiver.handler else { return }
            func field(_ code: Int32) -> String? {
                PQresultErrorField(result, code).map { String(cString: $0) }
            }
            handler(PostgresNotice(
                severity: field(recordkeeper_pg_diag_severity()) ?? "NOTICE",
                message: field(recordkeeper_pg_diag_message_primary()) ?? ""))
        }, context)
    }
}
