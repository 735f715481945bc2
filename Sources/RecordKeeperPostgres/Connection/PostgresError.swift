/// A failure reported by PostgreSQL or libpq, keeping the server's SQLSTATE and message.
///
/// ```swift
/// do {
///     try connection.execute("INSERT INTO t VALUES ($1)", [.text("x")])
/// } catch let error as PostgresError where error.sqlState == "23505" {
///     // unique_violation
/// }
/// ```
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: String, Sendable, Equatable {
        /// The server could not be reached, or the connection broke.
        case connection
        /// The server refused or failed a statement (see ``PostgresError/sqlState``).
        case statement
        /// A result did not have the shape the library expected (a column's type or a NULL).
        case unexpectedResult
        /// An argument was invalid before anything was sent (a string with a NUL character).
        case invalidArgument
        /// The connection settings are wrong: a conninfo libpq cannot read or whose values it
        /// refuses, a database that does not exist, TLS required but not offered. Retrying
        /// does not help.
        case configuration
        /// The server refused the client's identity: an unknown role, a wrong or missing
        /// password, no permission to connect. Retrying does not help.
        case authentication
        /// The server did not answer within the time the request was given (a stalled server,
        /// a lock held for longer, a dead peer): the statement was cancelled and the connection
        /// given up; the next request connects again.
        case timeout
        /// The calling task was cancelled: the running statement was cancelled and the
        /// connection given up; the next request connects again.
        case cancelled
    }

    /// What kind of failure this is.
    public let kind: Kind
    /// What the library was doing, e.g. `"push: lock the space counter"`.
    public let operation: String
    /// The five-character SQLSTATE the server reported (e.g. `"40001"`), if any.
    public let sqlState: String?
    /// The server's primary message, or libpq's message for connection failures.
    public let message: String
    /// The server's detail message, if any.
    public let detail: String?

    /// Creates an error.
    public init(
        _ kind: Kind, operation: String, sqlState: String? = nil, message: String,
        detail: String? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
    }

    /// Whether the failure means the server could not be reached or did not answer in time, or
    /// the connection is gone: a connection failure, SQLSTATE class 08 (connection exception),
    /// the server shutting down (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
    /// cannot_connect_now), a statement cancelled by the server's own timeouts (57014
    /// query_canceled, 55P03 lock_not_available), too many connections (53300).
    /// A ``Kind/timeout`` counts as one: the server did not answer in time.
    public var isConnectionFailure: Bool {
        if kind == .connection || kind == .timeout { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03", "57014", "55P03", "53300"].contains(sqlState)
    }

    public var description: String {
        var text = "PostgreSQL \(kind.rawValue) failure during \(operation)"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }
}
