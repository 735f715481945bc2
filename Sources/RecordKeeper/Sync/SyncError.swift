/// The error a ``RecordSyncServer`` throws.
///
/// ``code`` says what kind of failure it is (a sync client treats ``Code/unreachable`` as
/// "try again later"); ``message`` says what happened in words; ``underlying`` keeps the
/// implementation's own error (for PostgreSQL, a `PostgresError` with its SQLSTATE).
public struct SyncError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable name, such as `"unreachable"`.
        public let name: String

        package init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The request was malformed (an empty space, collection, key or device, a limit below
        /// 1, two changes of one record in one operation...). Nothing of it was applied.
        public static let invalidRequest = Code("invalidRequest")
        /// The server could not be reached, or the connection broke. A push's outcome is then
        /// unknown: push the same operations again (the server deduplicates them by id).
        public static let unreachable = Code("unreachable")
        /// The server's schema is newer than this library knows. Nothing was changed.
        public static let newerServerSchema = Code("newerServerSchema")
        /// The server failed the request (its transaction was rolled back).
        public static let serverFailure = Code("serverFailure")
    }

    /// What kind of failure this is.
    public let code: Code
    /// What happened, in words.
    public let message: String
    /// The implementation's own error, if there is one.
    public let underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        if let underlying { return "\(code): \(message) (\(underlying))" }
        return "\(code): \(message)"
    }
}
