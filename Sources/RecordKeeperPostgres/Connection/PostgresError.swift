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

    /// Whether the failure means the server could not be reached or the connection is gone:
    /// a connection failure, SQLSTATE class 08 (connection exception), or the server shutting
    /// down (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now).
    public var isConnectionFailure: Bool {
        if kind == .connection { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    public var description: String {
        var text = "PostgreSQL \(kind.rawValue) failure during \(operation)"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }
}
