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
/// Connecting migrates the server schema forward (``PostgresSyncSchema``). A server runs each
/// request on one of its connections (one by default; `connect(_:connections:notices:)` opens more), so
/// it runs as many requests at once as it has connections: pushes of different spaces run in
/// parallel in PostgreSQL, pushes of one space queue on the space's counter row.
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

    /// The server's first connection (the only one unless it was opened with more).
    public var connection: PostgresConnection { connections[0] }
    /// Every connection of the server.
    public let connections: [PostgresConnection]
    private let pool: ConnectionPool
    let hooks: Hooks

    /// Connects to PostgreSQL and migrates the sync schema to the current version.
    ///
    /// - Parameters:
    ///   - conninfo: libpq's keyword form (`"host=… port=… dbname=…"`) or a URI.
    ///   - connections: how many connections to open, so that as many requests run at once
    ///     (at least 1).
    ///   - notices: receives the notices and warnings the server sends (see
    ///     ``PostgresNotice``); without it they are dropped.
    /// - Throws: ``RecordKeeper/SyncError``: ``RecordKeeper/SyncError/Code/unreachable`` when the
    ///   server cannot be reached, ``RecordKeeper/SyncError/Code/newerServerSchema``, or
    ///   ``RecordKeeper/SyncError/Code/serverFailure`` (the `PostgresError` in `underlying`).
    public static func connect(
        _ conninfo: String, connections: Int = 1, notices: (@Sendable (PostgresNotice) -> Void)? = nil
    ) async throws -> PostgresSyncServer {
        guard connections >= 1 else {
            throw SyncError(.invalidRequest, "a server needs at least 1 connection, not \(connections)")
        }
        var opened: [PostgresConnection] = []
        for _ in 0..<connections {
            do {
                opened.append(try await PostgresConnection(conninfo: conninfo, notices: notices))
            } catch {
                throw Self.syncError(error, "connect to the sync server")
            }
        }
        return try await PostgresSyncServer(connections: opened, hooks: Hooks())
    }

    /// Uses an open connection, migrating the sync schema to the current version first.
    ///
    /// - Throws: as ``connect(_:connections:notices:)``.
    public convenience init(connection: PostgresConnection) async throws {
        try await self.init(connections: [connection], hooks: Hooks())
    }

    /// The same, with test hooks.
    package convenience init(connection: PostgresConnection, hooks: Hooks) async throws {
        try await self.init(connections: [connection], hooks: hooks)
    }

    /// Any number of open connections (at least one), with test hooks.
    package init(connections: [PostgresConnection], hooks: Hooks) async throws {
        precondition(!connections.isEmpty, "a PostgresSyncServer needs a connection")
        self.connections = connections
        self.pool = ConnectionPool(count: connections.count)
        self.hooks = hooks
        do {
            try await PostgresSyncSchema.migrate(connections[0])
        } catch let error as SyncError {
            throw error
        } catch {
            throw Self.syncError(error, "migrate the sync schema")
        }
    }

    /// Runs `body` on a free connection, waiting for one if all are busy.
    private func withConnection<T: Sendable>(
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let index = await pool.checkOut()
        do {
            let value = try await body(connections[index])
            await pool.checkIn(index)
            return value
        } catch {
            await pool.checkIn(index)
            throw error
        }
    }

    public func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try SyncRequestValidation.validatePush(space: space, operations: operations)
        if operations.isEmpty { return [] }
        let hooks = hooks
        do {
            return try await withConnection { connection in
                try await connection.transaction(.readCommitted, operation: "push") { connection in
                    try Self.push(space: space, operations: operations, on: connection, hooks: hooks)
                }
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
            return try await withConnection { connection in
                try await connection.transaction(.repeatableRead, readOnly: true, operation: "pull") {
                    connection in
                    try Self.pull(space: space, after: cursor, limit: limit, on: connection)
                }
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
            let code: SyncError.Code =
                error.isConnectionFailure ? .unreachable
                : error.kind == .invalidArgument ? .invalidRequest : .serverFailure
            return SyncError(code, "could not \(operation): \(error.message)", underlying: error)
        }
        return SyncError(.serverFailure, "could not \(operation): \(error)")
    }
}

/// Hands out the indices of a server's connections: one request per connection at a time,
/// later requests wait in arrival order.
private actor ConnectionPool {
    private var idle: [Int]
    private var waiters: [CheckedContinuation<Int, Never>] = []

    init(count: Int) {
        idle = Array((0..<count).reversed())
    }

    func checkOut() async -> Int {
        if let index = idle.popLast() { return index }
        return await withCheckedContinuation { waiters.append($0) }
    }

    func checkIn(_ index: Int) {
        if waiters.isEmpty {
            idle.append(index)
        } else {
            waiters.removeFirst().resume(returning: index)
        }
    }
}
