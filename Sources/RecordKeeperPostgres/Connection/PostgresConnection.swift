internal import CLibPQ
import Foundation
import RecordKeeperSync

/// One connection to a PostgreSQL server, over libpq.
///
/// Statements are parameterised only: ``execute(_:_:operation:resultFormat:)`` sends the SQL
/// text and the ``PostgresValue`` parameters apart (`PQexecParams`), so no input ever becomes
/// SQL. Each call runs one statement. Failures throw ``PostgresError`` with the server's
/// SQLSTATE and message.
///
/// The connection is an actor running on its own serial dispatch queue: libpq blocks while it
/// waits for the server, and that waiting never occupies Swift's cooperative thread pool.
///
/// **Bounded waits.** libpq runs non-blocking and every wait polls the socket: a statement run
/// inside ``withTimeout(_:_:)`` gives up at its deadline (``PostgresError/Kind/timeout``), and
/// cancelling the calling task (through ``cancelRunningStatement()``, which a task cancellation
/// handler calls) ends the wait at once (``PostgresError/Kind/cancelled``). Either way the
/// statement is cancelled on the server (`PQcancel`) and the connection given up; the next
/// statement connects again. TCP keepalives are on by default (see
/// ``defaultConnectionSettings``), so a dead peer is noticed between requests too.
///
/// ```swift
/// let connection = try await PostgresConnection(conninfo: "host=127.0.0.1 port=5432 dbname=app")
/// let head = try await connection.transaction(.repeatableRead, readOnly: true) { connection in
///     try connection.execute("SELECT counter FROM t WHERE id = $1", [.text("a")]).int64(0, 0)
/// }
/// ```
public actor PostgresConnection {
    /// A transaction's isolation level.
    public enum IsolationLevel: String, Sendable {
        /// Each statement sees what was committed when it started (PostgreSQL's default).
        case readCommitted = "READ COMMITTED"
        /// Every statement sees one snapshot, taken at the transaction's first statement.
        case repeatableRead = "REPEATABLE READ"
        /// Repeatable read plus serialisation failures (40001) for dangerous interleavings.
        case serializable = "SERIALIZABLE"
    }

    /// A statement's result format: text, or binary for faster decoding of bytea and integers.
    public enum ResultFormat: Int32, Sendable {
        /// Every value as text (bytea as `\x` hex).
        case text = 0
        /// Every value in PostgreSQL's binary form (integers big-endian, bytea raw).
        case binary = 1
    }

    private let executor: DatabaseExecutor
    private let owner: HandleOwner
    var handle: OpaquePointer? { owner.handle }
    private var inTransaction = false
    /// The statement being waited for, for cancellation from other threads.
    let running: RunningStatement
    /// When the current request must end (set by ``withTimeout(_:_:)``); nil: no bound.
    var deadline: ContinuousClock.Instant?
    /// The current request's time limit, for messages.
    var timeoutDescription = "the time given"
    /// The socket was given up (a timeout or a cancellation): the next statement connects again.
    var needsReset = false
    /// The last attempt to connect again failed (the server still down, refusing, not
    /// answering): the connection stays broken, and the next statement tries again.
    private var reconnectFailed = false
    /// How long connecting (and reconnecting) may take: connect_timeout, else the default.
    private let connectTimeout: Duration?

    /// The statements of ``executeOnEverySession(_:_:operation:)``, run again on each new
    /// session.
    private var sessionSetup: [(sql: StaticString, parameters: [PostgresValue], operation: String)] = []

    /// How many statements this connection has sent (each is one round trip to the server).
    public private(set) var statementCount = 0
    /// The connection string it was opened with, for opening another session like it (a
    /// server's wake session).
    package nonisolated let conninfo: String

    /// The connection's own serial queue, where every libpq call runs.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Connects to a server.
    ///
    /// Unless the connection string (or `PGCONNECT_TIMEOUT`) says otherwise, connecting gives up
    /// after ``defaultConnectTimeoutSeconds`` seconds: a server that does not answer at all (a
    /// host that drops packets) is reported as unreachable in seconds, not after the operating
    /// system's TCP timeout of minutes.
    ///
    /// Notices and warnings the server sends (see ``PostgresNotice``) go to `notices`; without
    /// it they are dropped (libpq would print them to stderr itself; this library prints
    /// nothing).
    ///
    /// - Parameters:
    ///   - conninfo: libpq's connection string, as keywords
    ///     (`"host=127.0.0.1 port=5432 user=app dbname=records"`) or a URI
    ///     (`"postgresql://app@127.0.0.1:5432/records"`).
    ///   - notices: Receives the server's notices, on the connection's queue, while a statement
    ///     runs: keep it short.
    /// - Throws: ``PostgresError``: of kind ``PostgresError/Kind/connection`` when the server cannot be
    ///   reached (libpq's message), ``PostgresError/Kind/configuration`` or
    ///   ``PostgresError/Kind/authentication`` when it refuses the settings or credentials,
    ///   ``PostgresError/Kind/cancelled`` when the task was cancelled.
    public init(
        conninfo: String, notices: (@Sendable (PostgresNotice) -> Void)? = nil
    ) async throws(PostgresError) {
        executor = DatabaseExecutor(label: "RecordKeeperPostgres.connection")
        owner = HandleOwner()
        running = RunningStatement(wake: try WakePipe())
        self.conninfo = conninfo
        // From here on the initializer runs on the connection's own queue: connecting blocks.
        let settings = try Self.connectionSettings(conninfo)
        connectTimeout = settings.connectTimeout
        let connection = try Self.connect(settings, wake: running.wake)
        // libpq keeps the receiver across resets.
        owner.notices = NoticeReceiver(notices)
        owner.notices?.install(on: connection)
        owner.handle = connection
    }

    /// The process id of the server backend serving this connection (`pg_backend_pid()`), for
    /// tests that watch it in `pg_stat_activity` or `pg_locks`. Like every call, it waits
    /// behind a statement the connection is running (one blocked on a lock, say): read it first.
    public var backendProcessID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    /// Runs one statement with positional parameters and returns its rows.
    ///
    /// - Parameters:
    ///   - sql: one statement, with `$1`, `$2`... for the parameters. A constant: never built
    ///     from input.
    ///   - parameters: the values of `$1`, `$2`...
    ///   - operation: what the caller is doing, for the error.
    ///   - resultFormat: text (default) or binary.
    /// - Throws: ``PostgresError``; a statement failure keeps the server's SQLSTATE and message.
    @discardableResult
    public func execute(
        _ sql: StaticString, _ parameters: [PostgresValue] = [], operation: String = "statement",
        resultFormat: ResultFormat = .text
    ) throws(PostgresError) -> PostgresResult {
        try run(sql.withUTF8Buffer { Array($0) }, parameters, operation: operation, resultFormat: resultFormat)
    }

    /// PostgreSQL's plan for `sql` with `parameters` (`EXPLAIN`, as text), for tests that check
    /// which indexes a statement uses. The statement is not run.
    package func explain(_ sql: StaticString, _ parameters: [PostgresValue] = []) throws(PostgresError) -> String {
        let result = try run(
            Array("EXPLAIN ".utf8) + sql.withUTF8Buffer { Array($0) }, parameters, operation: "explain", resultFormat: .text)
        var lines: [String] = []
        for row in 0..<result.rowCount { lines.append(try result.string(row, 0)) }
        return lines.joined(separator: "\n")
    }

    /// Runs one statement given as UTF-8 bytes (always a constant of this library's).
    private func run(
        _ sql: [UInt8], _ parameters: [PostgresValue], operation: String, resultFormat: ResultFormat
    ) throws(PostgresError) -> PostgresResult {
        let connection = try connected(operation)
        let encoded = try parameters.map { value throws(PostgresError) in try value.encoded() }
        statementCount += 1
        let types = encoded.map(\.type)
        let formats = encoded.map(\.format)
        let lengths = encoded.map { Int32($0.bytes?.count ?? 0) }
        // Copies of the parameter bytes that live until the statement is sent.
        let buffers: [UnsafeMutablePointer<CChar>?] = encoded.map { item in
            guard let bytes = item.bytes else { return nil }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
            bytes.withUnsafeBufferPointer { source in
                source.withMemoryRebound(to: CChar.self) { rebound in
                    if let base = rebound.baseAddress {
                        buffer.initialize(from: base, count: bytes.count)
                    }
                }
            }
            return buffer
        }
        defer { for buffer in buffers { buffer?.deallocate() } }
        let values = buffers.map { UnsafePointer($0) }
        var command = sql.map { CChar(bitPattern: $0) }
        command.append(0)
        let result = try sendAndReceive(connection, operation: operation) { connection in
            PQsendQueryParams(
                connection, command, Int32(encoded.count), types, values, lengths, formats, resultFormat.rawValue)
        }
        return try check(result, connection: connection, operation: operation)
    }

    /// Runs `body` (statements, a transaction) with a deadline: every wait for the server
    /// inside it gives up when `timeout` has passed since the call began, with a
    /// ``PostgresError/Kind/timeout`` failure (the statement cancelled on the server, the
    /// connection given up). A nested call keeps the earlier deadline.
    ///
    /// ```swift
    /// let rows = try await connection.withTimeout(.seconds(5)) { connection in
    ///     try connection.execute("SELECT 1")
    /// }
    /// ```
    public func withTimeout<T: Sendable>(
        _ timeout: Duration, _ body: @Sendable (isolated PostgresConnection) throws -> T
    ) throws -> T {
        if deadline != nil { return try body(self) }
        deadline = .now + timeout
        timeoutDescription = Self.describe(timeout)
        defer {
            deadline = nil
            timeoutDescription = "the time given"
        }
        return try body(self)
    }

    /// Cancels the statement this connection waits for, from any thread (a task cancellation
    /// handler): its wait ends at once, throwing ``PostgresError/Kind/cancelled``, and the
    /// waiting thread asks the server to cancel it (`PQcancel`) and gives the session up (the
    /// next request connects again). A connection that runs nothing is not affected: a call
    /// that comes after the statement ended never reaches the next one.
    ///
    /// ```swift
    /// try await withTaskCancellationHandler {
    ///     try await connection.withTimeout(.seconds(30)) { try $0.execute("SELECT pg_sleep(60)") }
    /// } onCancel: {
    ///     connection.cancelRunningStatement()
    /// }
    /// ```
    public nonisolated func cancelRunningStatement() {
        running.cancel()
    }

    static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds) s" }
        return String(format: "%.3f s", Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    ///
    /// `body` runs on the connection's queue and may call ``execute(_:_:operation:resultFormat:)``
    /// synchronously. Transactions do not nest.
    ///
    /// - Throws: what `body` throws (after the rollback), or ``PostgresError`` from BEGIN or
    ///   COMMIT (a serialisation failure or a broken connection at commit).
    public func transaction<T: Sendable>(
        _ isolation: IsolationLevel = .readCommitted, readOnly: Bool = false,
        operation: String = "transaction",
        _ body: @Sendable (isolated PostgresConnection) throws -> T
    ) throws -> T {
        precondition(!inTransaction, "PostgresConnection transactions do not nest")
        let begin: StaticString =
            switch (isolation, readOnly) {
            case (.readCommitted, false): "BEGIN ISOLATION LEVEL READ COMMITTED"
            case (.readCommitted, true): "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY"
            case (.repeatableRead, false): "BEGIN ISOLATION LEVEL REPEATABLE READ"
            case (.repeatableRead, true): "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            case (.serializable, false): "BEGIN ISOLATION LEVEL SERIALIZABLE"
            case (.serializable, true): "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"
            }
        try execute(begin, operation: "\(operation): begin")
        inTransaction = true
        defer { inTransaction = false }
        let value: T
        do {
            value = try body(self)
        } catch {
            rollBack(operation)
            throw error
        }
        do {
            try execute("COMMIT", operation: "\(operation): commit")
        } catch {
            rollBack(operation)
            throw error
        }
        return value
    }

    /// The settings libpq used for this connection, by keyword (`PQconninfo`), for tests.
    func settings() -> [String: String] {
        guard let handle, let options = PQconninfo(handle) else { return [:] }
        defer { PQconninfoFree(options) }
        var result: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { result[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return result
    }

    /// Rolls back after a failure. The failure is what the caller throws; if the rollback
    /// itself fails, the session's state is unknown, so the next statement starts a new
    /// session (the server rolls back whatever the old one had open).
    private func rollBack(_ operation: String) {
        guard let handle else { return }
        // The server rolls back a session that is gone (or given up) by itself.
        if needsReset || PQstatus(handle) != CONNECTION_OK { return }
        do {
            try execute("ROLLBACK", operation: "\(operation): rollback")
        } catch {
            // The session's state is unknown: the next statement starts a new one.
            needsReset = true
        }
    }

    /// The open connection, re-established first if it broke or was given up (a reset,
    /// bounded like connecting).
    private func connected(_ operation: String) throws(PostgresError) -> OpaquePointer {
        guard let handle else {
            throw PostgresError(.connection, operation: operation, message: "the connection is closed")
        }
        if needsReset || PQstatus(handle) != CONNECTION_OK {
            if inTransaction {
                // A transaction cannot continue on a new session.
                throw PostgresError(
                    .connection, operation: operation,
                    message: needsReset ? "the connection was given up" : Self.message(of: handle))
            }
            do {
                try Self.reset(handle, timeout: connectTimeout, wake: running.wake, operation: operation)
            } catch {
                reconnectFailed = true
                throw error
            }
            reconnectFailed = false
            needsReset = false
            // The new session starts from the role's settings: what the old one was given is
            // given again before anything else runs on it.
            for setup in sessionSetup {
                do {
                    try execute(setup.sql, setup.parameters, operation: setup.operation)
                } catch {
                    needsReset = true  // not a session to run on without it: the next statement tries again
                    throw error
                }
            }
        }
        return handle
    }

    /// Runs `sql` now, and again at the start of every new session this connection makes
    /// after losing one (a restarted server, a timeout that gave the session up), before any
    /// other statement: for session settings that must hold for as long as the connection
    /// is used, such as `statement_timeout`.
    ///
    /// ```swift
    /// try await connection.executeOnEverySession(
    ///     "SELECT set_config('statement_timeout', $1, false)", [.text("30s")], operation: "set the statement timeout")
    /// ```
    /// - Throws: ``PostgresError``, now; later, the statement that needed the new session
    ///   throws the setup's failure (and the next one tries a new session again).
    public func executeOnEverySession(
        _ sql: StaticString, _ parameters: [PostgresValue] = [], operation: String
    ) throws(PostgresError) {
        try execute(sql, parameters, operation: operation)
        sessionSetup.append((sql, parameters, operation))
    }

    /// Whether the session was lost while the connection was open: libpq found its socket
    /// broken (a session that ended while idle is found out by the next statement), or a
    /// timeout or cancellation gave it up, so the next statement connects again; false when
    /// connecting again was tried since and failed (another attempt would most likely wait
    /// and fail the same way) and for a closed connection. A ``PostgresSyncServer`` runs a
    /// request that lost its session once more (see `PostgresSyncServer.withConnection`).
    var lostSession: Bool {
        guard let handle, !reconnectFailed else { return false }
        return needsReset || PQstatus(handle) != CONNECTION_OK
    }

    private func check(
        _ result: OpaquePointer?, connection: OpaquePointer, operation: String
    ) throws(PostgresError) -> PostgresResult {
        guard let result else {
            throw PostgresError(
                PQstatus(connection) == CONNECTION_OK ? .statement : .connection,
                operation: operation, message: Self.message(of: connection))
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
            return PostgresResult(handle: result, operation: operation)
        }
        defer { PQclear(result) }
        let sqlState = Self.field(result, recordkeeper_pg_diag_sqlstate())
        let message =
            Self.field(result, recordkeeper_pg_diag_message_primary())
            ?? Self.message(of: connection)
        let kind: PostgresError.Kind =
            PQstatus(connection) != CONNECTION_OK && sqlState == nil ? .connection : .statement
        throw PostgresError(
            kind, operation: operation, sqlState: sqlState, message: message,
            detail: Self.field(result, recordkeeper_pg_diag_message_detail()))
    }

    private static func field(_ result: OpaquePointer, _ code: Int32) -> String? {
        guard let value = PQresultErrorField(result, code) else { return nil }
        return String(cString: value)
    }

    static func message(of connection: OpaquePointer) -> String {
        guard let text = PQerrorMessage(connection) else { return "unknown libpq failure" }
        let message = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return message.isEmpty ? "unknown libpq failure" : message
    }
}

/// Owns the libpq connection pointer, so that it is closed (PQfinish) when the connection
/// actor goes away.
///
/// `@unchecked Sendable`: `handle` is set once, on the connection's queue, before the actor is
/// returned, and then only read on that queue (every libpq call runs there); `deinit` runs when
/// the actor is gone, so nothing can use the pointer any more.
private final class HandleOwner: @unchecked Sendable {
    var handle: OpaquePointer?
    /// The receiver libpq calls with the connection's notices; lives as long as the handle.
    var notices: NoticeReceiver?

    deinit {
        if let handle { PQfinish(handle) }
    }
}
