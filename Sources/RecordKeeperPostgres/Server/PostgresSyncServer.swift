public import RecordKeeper

/// A ``RecordKeeper/RecordSyncServer`` over PostgreSQL: applies pushes and answers pulls in
/// the server database, for servers and trusted networks (devices on the internet should talk
/// to a relay instead, so they never hold database credentials).
///
/// ```swift
/// let server = try await PostgresSyncServer.connect("postgresql://sync@db.internal/records")
/// let outcomes = try await server.push(space: "alice", operations: operations)
/// let page = try await server.pull(space: "alice", after: .start, limit: 1000)
/// ```
///
/// Connecting migrates the server schema forward (``PostgresSyncSchema``). One server value
/// owns one connection and runs its requests one after the other; run several (one per worker)
/// for parallelism: pushes of different spaces run in parallel in PostgreSQL, pushes of one
/// space queue on the space's counter row.
public final class PostgresSyncServer: RecordSyncServer {
    /// Test hooks: called on the connection's queue at fixed points of a push, with the space.
    /// A hook may block (the push holds the space's counter lock meanwhile), or throw (the push
    /// fails and its transaction rolls back).
    package struct Hooks: Sendable {
        /// After the space's counter row is locked, before anything is read.
        package var afterCounterLock: (@Sendable (String) throws -> Void)?
        /// After every write of the push, before COMMIT.
        package var beforeCommit: (@Sendable (String) throws -> Void)?

        package init(
            afterCounterLock: (@Sendable (String) throws -> Void)? = nil,
            beforeCommit: (@Sendable (String) throws -> Void)? = nil
        ) {
            self.afterCounterLock = afterCounterLock
            self.beforeCommit = beforeCommit
        }
    }

    /// The connection the server runs on.
    public let connection: PostgresConnection
    let hooks: Hooks

    /// Connects to PostgreSQL and migrates the sync schema to the current version.
    ///
    /// - Parameter conninfo: libpq's keyword form (`"host=… port=… dbname=…"`) or a URI.
    /// - Throws: ``RecordKeeper/SyncError``: ``RecordKeeper/SyncError/Code/unreachable`` when the
    ///   server cannot be reached, ``RecordKeeper/SyncError/Code/newerServerSchema``, or
    ///   ``RecordKeeper/SyncError/Code/serverFailure`` (the `PostgresError` in `underlying`).
    public static func connect(_ conninfo: String) async throws -> PostgresSyncServer {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection(conninfo: conninfo)
        } catch {
            throw Self.syncError(error, "connect to the sync server")
        }
        return try await PostgresSyncServer(connection: connection)
    }

    /// Uses an open connection, migrating the sync schema to the current version first.
    ///
    /// - Throws: as ``connect(_:)``.
    public convenience init(connection: PostgresConnection) async throws {
        try await self.init(connection: connection, hooks: Hooks())
    }

    /// The same, with test hooks.
    package init(connection: PostgresConnection, hooks: Hooks) async throws {
        self.connection = connection
        self.hooks = hooks
        do {
            try await PostgresSyncSchema.migrate(connection)
        } catch let error as SyncError {
            throw error
        } catch {
            throw Self.syncError(error, "migrate the sync schema")
        }
    }

    public func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try SyncRequestValidation.validatePush(space: space, operations: operations)
        if operations.isEmpty { return [] }
        let hooks = hooks
        do {
            return try await connection.transaction(.readCommitted, operation: "push") { connection in
                try Self.push(space: space, operations: operations, on: connection, hooks: hooks)
            }
        } catch let error as SyncError {
            throw error
        } catch {
            throw Self.syncError(error, "push to space \(space)")
        }
    }

    public func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit)
        do {
            // One snapshot for the counter and the rows: every row up to the counter read is
            // committed and visible in it (see Self.pull).
            return try await connection.transaction(.repeatableRead, readOnly: true, operation: "pull") {
                connection in
                try Self.pull(space: space, after: cursor, limit: limit, on: connection)
            }
        } catch let error as SyncError {
            throw error
        } catch {
            throw Self.syncError(error, "pull from space \(space)")
        }
    }

    /// Maps a failure to the protocol's error, keeping the original (with its SQLSTATE).
    static func syncError(_ error: any Error, _ operation: String) -> SyncError {
        if let error = error as? PostgresError {
            return SyncError(
                error.isConnectionFailure ? .unreachable : .serverFailure,
                "could not \(operation): \(error.message)", underlying: error)
        }
        return SyncError(.serverFailure, "could not \(operation): \(error)")
    }
}
