import Foundation
import RecordKeeperSync

/// The session through which a ``PostgresSyncServer`` hears of pushes committed by other
/// processes (another relay, the tool in direct mode), to wake its held live pulls: one
/// dedicated connection, opened at the first live pull and kept while the server lives.
///
/// - ``PostgresSyncServer/LiveWake/listen``: `LISTEN recordkeeper_sync`; each push that
///   advances a space's counter sends `pg_notify('recordkeeper_sync', space)` in its
///   transaction, and the notification wakes the waiters of that space.
/// - ``PostgresSyncServer/LiveWake/poll(every:)``: every interval, while pulls are held, one
///   statement reads the counters of the spaces with waiters (`space = ANY($1)`) and wakes
///   those whose counter moved since the last read (or that had no last read).
///
/// A failure of the session never fails a pull: the session connects again with backoff
/// (50 ms doubling to 5 s), then wakes every waiter (a notification may have been lost
/// meanwhile), and waiters still end at their deadline.
///
/// `@unchecked Sendable`: the stored properties are constants or `Sendable`, and `task` and
/// `current` are read and written only under `lock`.
final class PostgresWakeSession: @unchecked Sendable {
    /// The channel of the push notifications.
    static let channel = "recordkeeper_sync"
    /// The longest space name sent as a notification's payload; a longer one is sent as the
    /// empty payload, which wakes every space (PostgreSQL's payloads are shorter than 8,000 bytes).
    static let longestPayload = 7_000

    /// What a test or a metrics endpoint can see of the session.
    struct Status: Sendable {
        /// Times the session has (re)connected and set itself up (`LISTEN`, or its first read).
        var sessions = 0
        /// The server backend of the current session.
        var backendProcessID: Int32?
        /// Failures of the session so far, and the last one.
        var failures = 0
        var lastFailure: String?
    }

    let mode: PostgresSyncServer.LiveWake
    let conninfo: String
    private let waiters: SyncChangeWaiters
    private let timeout: Duration
    private let lock = NSLock()
    private var task: Task<Void, Never>?
    private let current = StatusBox()

    init(mode: PostgresSyncServer.LiveWake, conninfo: String, waiters: SyncChangeWaiters, timeout: Duration) {
        self.mode = mode
        self.conninfo = conninfo
        self.waiters = waiters
        self.timeout = timeout
    }

    deinit {
        task?.cancel()
    }

    var status: Status { current.read() }

    /// Starts the session unless it runs already (the first live pull calls it).
    func start() {
        lock.withLock {
            guard task == nil else { return }
            task = Task.detached { [mode, conninfo, waiters, timeout, current] in
                await Self.run(mode: mode, conninfo: conninfo, waiters: waiters, timeout: timeout, update: current.update)
            }
        }
    }

    /// Ends the session (the server is going away).
    func stop() {
        lock.withLock {
            task?.cancel()
            task = nil
        }
    }

    /// The session's loop until cancelled: connect, set up (`LISTEN`, or a first read of the
    /// counters, which proves the poll's statement works), wake everyone, then listen or poll;
    /// on a failure, record it, back off, and start again. The backoff starts over, and a
    /// session is counted, only once the set-up worked: a poll that fails every time (a wake
    /// connection on another database or search path, a role that may not read the counters)
    /// backs off to 5 s instead of retrying every 50 ms. Waiters are woken once when a working
    /// session fails and once when one is set up again, and in between every 5 s (the longest
    /// backoff), not on every failed attempt.
    private static func run(
        mode: PostgresSyncServer.LiveWake, conninfo: String, waiters: SyncChangeWaiters, timeout: Duration,
        update: @Sendable ((inout Status) -> Void) -> Void
    ) async {
        var connection: PostgresConnection?
        var backoff = Duration.milliseconds(50)
        var working = false
        while !Task.isCancelled {
            do {
                let session: PostgresConnection
                if let connection { session = connection } else { session = try await PostgresConnection(conninfo: conninfo) }
                connection = session
                var seen: [String: Int64] = [:]
                switch mode {
                case .listen:
                    // Runs on a connection that broke or was given up: it connects again first.
                    _ = try await session.withTimeout(timeout) {
                        try $0.execute("LISTEN recordkeeper_sync", operation: "listen")
                    }
                case .poll:
                    seen = try await counters(of: waiters.spaces, on: session, timeout: timeout)
                }
                let pid = await session.backendProcessID
                update { status in
                    status.sessions += 1
                    status.backendProcessID = pid
                }
                // A change may have committed while no session was listening.
                waiters.notifyAll()
                backoff = .milliseconds(50)
                working = true
                switch mode {
                case .listen: try await listen(on: session, waiters: waiters)
                case .poll(let interval):
                    try await poll(on: session, every: interval, seen: seen, waiters: waiters, timeout: timeout)
                }
            } catch {
                if Task.isCancelled { return }
                update { status in
                    status.failures += 1
                    status.lastFailure = String(describing: error)
                    status.backendProcessID = nil
                }
                // Once when a working session fails; then, while none works, at each attempt
                // of the longest backoff (every 5 s): held pulls still hear of other processes'
                // pushes, late, instead of only at their deadlines.
                if working || backoff >= .seconds(5) {
                    working = false
                    waiters.notifyAll()
                }
                let jitter = Double.random(in: 0.8...1.2)
                do { try await Task.sleep(for: backoff * jitter) } catch { return }
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// Wakes the waiters of each space notified, until the session fails or the task is
    /// cancelled.
    private static func listen(on session: PostgresConnection, waiters: SyncChangeWaiters) async throws {
        while true {
            let payloads = try await withTaskCancellationHandler {
                try await session.notifications(until: nil)
            } onCancel: {
                session.cancelRunningStatement()
            }
            if payloads.contains("") { waiters.notifyAll() }
            for space in Set(payloads) where !space.isEmpty { waiters.notify(space: space) }
        }
    }

    /// Reads the counters of the spaces with waiters every `interval`, waking those that moved
    /// since `seen` (the set-up's read).
    private static func poll(
        on session: PostgresConnection, every interval: Duration, seen first: [String: Int64],
        waiters: SyncChangeWaiters, timeout: Duration
    ) async throws {
        var seen = first
        while true {
            try await Task.sleep(for: interval)
            let spaces = waiters.spaces
            if spaces.isEmpty {
                seen = [:]
                continue
            }
            let counters = try await counters(of: spaces, on: session, timeout: timeout)
            var next: [String: Int64] = [:]
            for space in spaces {
                let counter = counters[space] ?? 0
                // Without a last read, a waiter may have pulled before a commit this read
                // saw: it pulls again (at most once per space that starts waiting).
                if seen[space].map({ counter > $0 }) ?? true { waiters.notify(space: space) }
                next[space] = counter
            }
            seen = next
        }
    }

    /// The counters of `spaces` (a space without a row is absent), read in one statement.
    private static func counters(
        of spaces: [String], on session: PostgresConnection, timeout: Duration
    ) async throws -> [String: Int64] {
        try await withTaskCancellationHandler {
            try await session.withTimeout(timeout) { connection in
                let rows = try connection.execute(
                    "SELECT space, counter FROM recordkeeper_sync_spaces WHERE space = ANY($1::text[])",
                    [.binaryTextArray(spaces)], operation: "read the counters of the spaces with live pulls")
                var counters: [String: Int64] = [:]
                for row in 0..<rows.rowCount { counters[try rows.string(row, 0)] = try rows.int64(row, 1) }
                return counters
            }
        } onCancel: {
            session.cancelRunningStatement()
        }
    }
}

/// The wake session's ``PostgresWakeSession/Status``, written by its task and read by tests.
///
/// `@unchecked Sendable`: `status` is read and written only under `lock`.
private final class StatusBox: @unchecked Sendable {
    private let lock = NSLock()
    private var status = PostgresWakeSession.Status()

    func read() -> PostgresWakeSession.Status { lock.withLock { status } }

    func update(_ change: (inout PostgresWakeSession.Status) -> Void) {
        lock.withLock { change(&status) }
    }
}
