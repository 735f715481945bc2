/// The error a ``RecordSyncServer`` throws.
///
/// ``code`` says what kind of failure it is: only ``Code/unreachable`` means "try again later";
/// ``Code/configuration`` and ``Code/authentication`` need the settings corrected,
/// ``Code/unauthorized`` a new token, ``Code/forbidden`` a token for what was asked,
/// ``Code/forkedDevice`` needs `RecordSync.recover()`. An unreachable server may say when to
/// try again (``retryAfter``). ``message`` says what happened in
/// words, naming the space, record or operation; ``underlying`` keeps the implementation's own
/// error (for PostgreSQL, a `PostgresError` with its SQLSTATE).
public struct SyncError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable name, such as `"unreachable"`.
        public let name: String

        init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The request was malformed (an empty space, collection, key or device, a limit below
        /// 1, two changes of one record in one operation...). Nothing of it was applied.
        public static let invalidRequest = Code("invalidRequest")
        /// The server could not be reached, or the connection broke. A push's outcome is then
        /// unknown: push the same operations again (the server deduplicates them by id).
        public static let unreachable = Code("unreachable")
        /// The server's schema is newer than this library knows. Nothing was changed.
        public static let newerServerSchema = Code("newerServerSchema")
        /// The server failed the request (its transaction was rolled back), or answered what
        /// cannot be true for what the device knows (a counter below what it has seen, an
        /// outcome of another operation, a change the store cannot hold): the message names it.
        public static let serverFailure = Code("serverFailure")
        /// The connection settings are wrong: a conninfo libpq cannot read or whose values it
        /// refuses, a database that does not exist, TLS required by the settings but not
        /// offered by the server. Trying again does not help; nothing was changed.
        public static let configuration = Code("configuration")
        /// The server refused who the client is: an unknown role, a wrong or missing password,
        /// no permission to connect. Trying again does not help; nothing was changed.
        public static let authentication = Code("authentication")
        /// The server refused this store's operations because another store synced as the
        /// same device (a backup, a copied file, or this store before it was restored wrote
        /// operations this store never made). Nothing of them was applied and they stay
        /// pending; `RecordSync.recover()` (`recordkeeper sync --recover`) makes the store
        /// sync as a new device.
        public static let forkedDevice = Code("forkedDevice")
        /// A relay refused the request's token (HTTP 401): none was given, or it is expired,
        /// not yet valid, wrongly signed or for another audience. Nothing was read or written,
        /// and sending the same token again does not help: get a new one.
        public static let unauthorized = Code("unauthorized")
        /// A relay refused what the token asked for (HTTP 403): another space than the token's,
        /// a push with a read-only token, a collection the token does not grant. Nothing was
        /// read or written; trying again with the same token does not help.
        public static let forbidden = Code("forbidden")
        /// The pull's cursor is behind the space's compaction horizon: the server deleted
        /// tombstones the device has not pulled (it was away longer than the horizon's age), so
        /// pulling on from it could miss deletions. Nothing was read; the device resyncs:
        /// `RecordSync` pulls the space's current state from the start, keeps its pending
        /// changes and removes the records deleted meanwhile (docs/SYNC.md "Resync").
        public static let behindHorizon = Code("behindHorizon")
    }

    /// What kind of failure this is.
    public let code: Code
    /// What happened, in words.
    public let message: String
    /// The implementation's own error, if there is one.
    public let underlying: (any Error & Sendable)?
    /// For ``Code/unreachable``: how long the server asked to be left alone (a relay's
    /// `Retry-After` on 429 or 503), when it said so.
    public let retryAfter: Duration?
    /// What the device side had done before it failed: a `SyncReport` of module `RecordKeeper`,
    /// which reads it as `partialReport`. This layer does not know the device's report type
    /// (servers never set it), so it holds the value as it is given. `nil` when nothing was done.
    package var partialResult: (any Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil, retryAfter: Duration? = nil
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.retryAfter = retryAfter
        self.partialResult = nil
    }

    /// Whether the same request may succeed later, unchanged: the server could not be reached
    /// or failed (``Code/unreachable``, ``Code/serverFailure``). Continuous sync
    /// (`RecordSync.keepInSync(_:)`) tries these again after a backoff and stops on every
    /// other code, which needs something mended first (a token, the settings, `recover()`).
    public var isTransient: Bool {
        code == .unreachable || code == .serverFailure
    }

    public var description: String {
        if let underlying { return "\(code): \(message) (\(underlying))" }
        return "\(code): \(message)"
    }
}
