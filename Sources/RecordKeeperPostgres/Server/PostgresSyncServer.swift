public import RecordKeeperSync
package import Foundation

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
/// request on one of its connections (one by default; `connect(_:connections:timeout:notices:)`
/// opens more), so it runs as many requests at once as it has connections: pushes of different
/// spaces run in parallel in PostgreSQL, pushes of one space queue on the space's counter row.
///
/// **Bounded requests.** Each push and pull (each attempt: see "Lost sessions") must end
/// within ``timeout`` (default ``defaultTimeout``, 30 s): a server that stops answering (a
/// stalled backend, a row lock held by someone else, a dead peer) gives
/// ``RecordKeeper/SyncError/Code/unreachable`` then, with the statement cancelled on the server
/// and nothing of the request kept (an outcome not received is unknown: push the same
/// operations again). Cancelling the calling task cancels the running statement on the server
/// (`PQcancel`) and throws `CancellationError`.
///
/// **Lost sessions.** A connection whose session ended while it waited for a request
/// (PostgreSQL restarted, an administrator ended its backend) looks open until a statement
/// finds it broken. A request whose session is lost that way runs once more on the same
/// connection, which connects again (bounded by the conninfo's `connect_timeout`), and that
/// attempt has ``timeout`` of its own: once the server is back, a restart costs no failed
/// requests. If the second attempt fails too, its failure is reported
/// (``RecordKeeper/SyncError/Code/unreachable``). Running a push again is safe: a push that
/// committed before its answer was lost is answered with the stored outcomes
/// (`isRedelivery`), never applied twice.
public final class PostgresSyncServer: SyncCompactingServer, SyncPagesPulling {
    /// Test hooks: called on the connection's queue at fixed points of a push, with the space.
    /// A hook may block (the push holds the space's counter lock meanwhile), or throw (the push
    /// fails and its transaction rolls back; after COMMIT, the push fails all the same).
    package struct Hooks: Sendable {
        /// After the space's counter row is locked, before anything is read.
        package var afterCounterLock: (@Sendable (String) throws -> Void)?
        /// After every write of the push, before COMMIT.
        package var beforeCommit: (@Sendable (String) throws -> Void)?
        /// After the push's COMMIT, on its connection, before its outcomes are returned: a
        /// hook that ends the session there (or throws) loses the answer of a committed push.
        package var afterCommit: (@Sendable (String, isolated PostgresConnection) throws -> Void)?
        /// Inside each deletion batch of a compaction, after its DELETE, before its COMMIT.
        package var inCompactionBatch: (@Sendable (String) throws -> Void)?
        /// The clock ages are measured with (operations received, cursors handed out,
        /// compaction); the system clock when nil.
        package var now: (@Sendable () -> Date)?
        /// The payload bytes one pull reads; ``/RecordKeeperSync/SyncPage/payloadBudget`` when
        /// nil (a test of paging by size sets a small one).
        package var pullByteBudget: Int?

        package init(
            afterCounterLock: (@Sendable (String) throws -> Void)? = nil,
            beforeCommit: (@Sendable (String) throws -> Void)? = nil,
            afterCommit: (@Sendable (String, isolated PostgresConnection) throws -> Void)? = nil,
            inCompactionBatch: (@Sendable (String) throws -> Void)? = nil,
            now: (@Sendable () -> Date)? = nil,
            pullByteBudget: Int? = nil
        ) {
            self.afterCounterLock = afterCounterLock
            self.beforeCommit = beforeCommit
            self.afterCommit = afterCommit
            self.inCompactionBatch = inCompactionBatch
            self.now = now
            self.pullByteBudget = pullByteBudget
        }
    }

    /// The server's first connection (the only one unless it was opened with more).
    public var connection: PostgresConnection { connections[0] }
    /// Every connection of the server.
    public let connections: [PostgresConnection]
    private let pool: ConnectionPool
    /// The live pulls held now, woken by this server's pushes and by ``wake``.
    let waiters = SyncChangeWaiters()
    /// The session through which pushes of other processes wake them.
    let wake: PostgresWakeSession
    let hooks: Hooks
    /// The clock: the hooks' or the system's.
    let now: @Sendable () -> Date
    /// How long one push or pull may take, its waits for the server included.
    public let timeout: Duration

    /// The time a push or pull may take unless `timeout:` says otherwise.
    public static let defaultTimeout: Duration = .seconds(30)

    /// Connects to PostgreSQL and migrates the sync schema to the current version.
    ///
    /// ```swift
    /// let server = try await PostgresSyncServer.connect(conninfo, connections: 4, timeout: .seconds(10))
    /// ```
    ///
    /// - Parameters:
    ///   - conninfo: libpq's keyword form (`"host=… port=… dbname=…"`) or a URI.
    ///   - connections: how many connections to open, so that as many requests run at once
    ///     (at least 1).
    ///   - timeout: how long one push or pull may take (``defaultTimeout`` unless given);
    ///     connecting is bounded by the conninfo's `connect_timeout` instead.
    ///   - liveWake: how held live pulls hear of pushes committed by other processes
    ///     (``LiveWake``; ``LiveWake/default`` unless given). Every server on one database should
    ///     use the same.
    ///   - wakeConninfo: the connection string of the wake session (see ``LiveWake``), opened
    ///     at the first live pull; `nil` uses `conninfo`. Give a direct connection to
    ///     PostgreSQL here when `conninfo` goes through a pooler such as PgBouncer in
    ///     transaction mode, which does not keep a `LISTEN` session.
    ///   - notices: receives the notices and warnings the server sends (see
    ///     ``PostgresNotice``); without it they are dropped.
    /// - Throws: ``RecordKeeper/SyncError``: ``RecordKeeper/SyncError/Code/unreachable`` when the
    ///   server cannot be reached, ``RecordKeeper/SyncError/Code/configuration`` when the
    ///   settings are wrong (a conninfo libpq refuses, a database that does not exist, TLS
    ///   required but not offered), ``RecordKeeper/SyncError/Code/authentication`` when the
    ///   server refuses the role or password, ``RecordKeeper/SyncError/Code/newerServerSchema``,
    ///   or ``RecordKeeper/SyncError/Code/serverFailure`` (the `PostgresError` in `underlying`).
    public static func connect(
        _ conninfo: String, connections: Int = 1, timeout: Duration = defaultTimeout,
        liveWake: LiveWake = .default, wakeConninfo: String? = nil,
        notices: (@Sendable (PostgresNotice) -> Void)? = nil
    ) async throws -> PostgresSyncServer {
        guard connections >= 1 else {
            throw SyncError(.invalidRequest, "a server needs at least 1 connection, not \(connections)")
        }
        guard timeout > .zero else {
            throw SyncError(.invalidRequest, "a server's timeout must be positive, not \(timeout)")
        }
        try liveWake.validate()
        if let wakeConninfo {
            do {
                try PostgresConnection.validate(conninfo: wakeConninfo)
            } catch {
                throw Self.syncError(error, "read the wake session's conninfo")
            }
        }
        var opened: [PostgresConnection] = []
        for _ in 0..<connections {
            do {
                opened.append(try await PostgresConnection(conninfo: conninfo, notices: notices))
            } catch {
                if error.kind == .cancelled { throw CancellationError() }
                throw Self.syncError(error, "connect to the sync server")
            }
        }
        return try await PostgresSyncServer(
            connections: opened, hooks: Hooks(), timeout: timeout, liveWake: liveWake, wakeConninfo: wakeConninfo)
    }

    /// Uses an open connection, migrating the sync schema to the current version first.
    ///
    /// Its live pulls wake by ``LiveWake/default``, through a session opened like `connection`.
    ///
    /// - Throws: as ``connect(_:connections:timeout:liveWake:wakeConninfo:notices:)``.
    public convenience init(connection: PostgresConnection, timeout: Duration = defaultTimeout) async throws {
        try await self.init(connections: [connection], hooks: Hooks(), timeout: timeout)
    }

    /// The same, with test hooks.
    package convenience init(connection: PostgresConnection, hooks: Hooks, timeout: Duration = defaultTimeout)
        async throws
    {
        try await self.init(connections: [connection], hooks: hooks, timeout: timeout)
    }

    /// Any number of open connections (at least one), with test hooks; the wake session
    /// (opened at the first live pull) connects with `wakeConninfo`, else as the first connection.
    package init(
        connections: [PostgresConnection], hooks: Hooks, timeout: Duration = defaultTimeout,
        liveWake: LiveWake = .default, wakeConninfo: String? = nil
    ) async throws {
        precondition(!connections.isEmpty, "a PostgresSyncServer needs a connection")
        try liveWake.validate()
        self.connections = connections
        self.wake = PostgresWakeSession(
            mode: liveWake, conninfo: wakeConninfo ?? connections[0].conninfo, waiters: waiters, timeout: timeout)
        self.pool = ConnectionPool(count: connections.count)
        self.hooks = hooks
        self.now = hooks.now ?? { Date() }
        self.timeout = timeout
        do {
            try await PostgresSyncSchema.migrate(connections[0], timeout: timeout)
        } catch {
            throw Self.failure(error, "migrate the sync schema")
        }
    }

    deinit {
        wake.stop()
    }

    /// Runs `body` on a free connection, waiting for one if all are busy. Cancelling the task
    /// cancels the statement the connection runs.
    ///
    /// When `body` fails because the connection lost its session (see `isLostSession(_:on:)`),
    /// typically one that ended while the connection sat idle in the pool (a PostgreSQL restart,
    /// a terminated backend: libpq only notices at the next statement), `body` runs once more
    /// on the same connection, whose first statement connects again (bounded by
    /// `connect_timeout`); what that second attempt throws is thrown. Without it, every pooled
    /// connection would fail one request after each restart.
    ///
    /// Running `body` twice is safe for every request of this server, as each may have taken
    /// effect before its session was lost (the answer of a COMMIT lost on the way), or not:
    /// - a push: its operations are recorded in its transaction, and a re-delivered operation
    ///   is answered with its stored outcome and has no second effect (docs/SYNC.md "Exactly
    ///   once per space"); uncommitted, the server rolled the transaction back;
    /// - a pull (also each pull of a live pull), `spaces`, `holds`: read-only, apart from a
    ///   pull's cursor mark, an upsert keeping the lowest (recorded twice, the same);
    /// - a compaction step: the horizon only moves forward, to a bound computed again; a
    ///   deletion batch deletes rows its statement finds still due (a batch that committed
    ///   finds its rows gone, so only the counts reported miss them, as they would if the
    ///   compaction had failed there).
    ///
    /// A new body must be as safe to repeat, or not run through here.
    func withConnection<T: Sendable>(
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let index = await pool.checkOut()
        let connection = connections[index]
        do {
            let value = try await withTaskCancellationHandler {
                do {
                    return try await body(connection)
                } catch {
                    guard await Self.isLostSession(error, on: connection) else { throw error }
                    // Once: a session lost again (or failing to connect) is reported.
                    return try await body(connection)
                }
            } onCancel: {
                connection.cancelRunningStatement()
            }
            await pool.checkIn(index)
            return value
        } catch {
            await pool.checkIn(index)
            throw error
        }
    }

    /// Whether `error` means `connection` lost its session while the request ran: a connection
    /// failure (``PostgresError/isConnectionFailure``) that is neither a timeout (the server did
    /// not answer in time: another attempt would not either, and would double the wait) nor a
    /// cancellation, the task not cancelled, and the connection now broken (not a statement the
    /// server cancelled on a live session, 57014 or 55P03, nor a failure to connect again:
    /// see `PostgresConnection.lostSession`).
    private static func isLostSession(_ error: any Error, on connection: PostgresConnection) async -> Bool {
        guard !Task.isCancelled, let error = error as? PostgresError, error.isConnectionFailure,
            error.kind != .timeout, error.kind != .cancelled
        else { return false }
        return await connection.lostSession
    }

    public func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try SyncRequestValidation.validatePush(space: space, operations: operations)
        if operations.isEmpty { return [] }
        let hooks = hooks
        let timeout = timeout
        let now = now
        let notifies = wake.mode == .listen
        let outcomes: [SyncOutcome]
        do {
            outcomes = try await withConnection { connection in
                try await connection.withTimeout(timeout) { connection in
                    let outcomes = try connection.transaction(.readCommitted, operation: "push") { connection in
                        try Self.push(
                            space: space, operations: operations, on: connection, hooks: hooks, now: now,
                            notifies: notifies)
                    }
                    try hooks.afterCommit?(space, connection)
                    return outcomes
                }
            }
        } catch {
            throw Self.failure(error, "push to space \(space)")
        }
        // Committed: this server's own live pulls of the space hear of it at once.
        if outcomes.contains(where: { $0.result.appliedVersion != nil }) { waiters.notify(space: space) }
        return outcomes
    }

    public func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    /// Pulls the changes of `collections` only (every collection for `nil`): each collection is
    /// read through its own feed index (schema version 5), so a pull costs the changes it
    /// returns, not the other collections' changes it passes. The cursor stays the space's.
    ///
    /// - Throws: ``SyncError`` (see ``RecordSyncServer/pull(space:after:limit:collections:)``).
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?
    ) async throws -> SyncPage {
        try await pullPages(space: space, after: cursor, limit: limit, collections: collections, pages: 1)[0]
    }

    /// Up to `pages` consecutive pages of a pull in one snapshot and one statement
    /// (``/RecordKeeperSync/SyncPagesPulling``): what the relay answers a device catching up
    /// with, in one round trip to PostgreSQL instead of one per page.
    package func pullPages(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, pages: Int
    ) async throws -> [SyncPage] {
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        let pages = max(1, min(pages, SyncPage.maximumLimit / limit))
        let timeout = timeout
        let budget = max(1, hooks.pullByteBudget ?? SyncPage.payloadBudget)
        let bucket = SyncHorizon.bucket(of: now())
        do {
            // One snapshot for the counter and the rows: every row up to the counter read is
            // committed and visible in it (see Self.pull). The cursor handed out is recorded
            // afterwards, only when it is the lowest of its hour (see Self.recordMark).
            return try await withConnection { connection in
                try await connection.withTimeout(timeout) { connection in
                    let (result, mark) = try connection.transaction(.repeatableRead, readOnly: true, operation: "pull") {
                        connection in
                        try Self.pull(
                            space: space, after: cursor, limit: limit, pages: pages, collections: collections,
                            budget: budget, bucket: bucket, on: connection)
                    }
                    if let mark { try Self.recordMark(mark, space: space, bucket: bucket, on: connection) }
                    return result
                }
            }
        } catch {
            throw Self.failure(error, "pull from space \(space)")
        }
    }

    /// `date` in whole microseconds since 1970 (PostgreSQL's resolution).
    static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded(.down))
    }

    /// The error a request that failed with `error` throws: a ``RecordKeeper/SyncError`` as it
    /// is, `CancellationError` for a cancelled statement, else ``syncError(_:_:)``.
    static func failure(_ error: any Error, _ operation: String) -> any Error {
        if let error = error as? SyncError { return error }
        if let error = error as? PostgresError, error.kind == .cancelled { return CancellationError() }
        return syncError(error, operation)
    }

    /// Maps a failure to the protocol's error, keeping the original (with its SQLSTATE).
    ///
    /// A statement refused because the role may not use the sync schema's tables or create
    /// them (42501 insufficient privilege; 3F000 no schema it may use on its search path) is a
    /// setting to fix, never "try later".
    static func syncError(_ error: any Error, _ operation: String) -> SyncError {
        if let error = error as? PostgresError, error.kind == .statement, ["42501", "3F000"].contains(error.sqlState) {
            return SyncError(
                .configuration,
                "could not \(operation): \(error.message); the database role may not use or create the sync schema: run "
                    + "`recordkeeper-relay migrate` as a role that may create its tables, with `--grant ROLE` for "
                    + "the role that serves or syncs",
                underlying: error)
        }
        if let error = error as? PostgresError {
            let code: SyncError.Code =
                switch error.kind {
                case .configuration: .configuration
                case .authentication: .authentication
                case .invalidArgument: .invalidRequest
                default: error.isConnectionFailure ? .unreachable : .serverFailure
                }
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
