public import RecordKeeperSync

extension PostgresSyncServer {
    /// How a server's held live pulls hear of pushes that other processes commit (another
    /// relay on the same database, the tool in direct mode); pushes through the server itself
    /// wake its pulls at once either way. docs/SYNC.md "Live pulls" has the measurements
    /// behind the default.
    public enum LiveWake: Sendable, Hashable {
        /// `LISTEN` on one dedicated session per server; every push that advances a space's
        /// counter sends `pg_notify` in its transaction (delivered at commit). PostgreSQL
        /// serialises the commits of notifying transactions on one database-wide lock.
        case listen
        /// While pulls are held, one statement per `interval` reads the counters of the
        /// spaces with waiters (`space = ANY($1)`) on the dedicated session; pushes send
        /// nothing. A push is heard within `interval` plus one round trip.
        case poll(every: Duration)

        /// What ``PostgresSyncServer/connect(_:connections:timeout:liveWake:wakeConninfo:notices:)``
        /// uses unless told: polling every 5 ms (docs/SYNC.md "Live pulls" says why).
        public static let `default` = LiveWake.poll(every: .milliseconds(5))

        /// - Throws: ``RecordKeeper/SyncError/Code/invalidRequest`` for a poll interval that is
        ///   not positive.
        func validate() throws(SyncError) {
            if case .poll(let interval) = self, interval <= .zero {
                throw SyncError(.invalidRequest, "a live wake's poll interval must be positive, not \(interval)")
            }
        }
    }

    /// A live pull: answers at once when the space has changes after `cursor`; otherwise
    /// holds the pull, without holding a connection, until a push of the space commits
    /// (through this server, or through another process: see ``LiveWake``) or `wait` passes.
    ///
    /// ```swift
    /// let page = try await server.pull(space: "alice", after: cursor, limit: 500, collections: nil, wait: .seconds(30))
    /// ```
    ///
    /// The first live pull opens the server's wake session (one more connection, kept while
    /// the server lives). A failure of that session never fails a pull: held pulls still end
    /// at their deadline, and the session connects again.
    ///
    /// - Throws: ``RecordKeeper/SyncError``, as ``pull(space:after:limit:collections:)``;
    ///   ``RecordKeeper/SyncError/Code/invalidRequest`` for a `wait` out of range;
    ///   `CancellationError` when the task is cancelled while it waits.
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try SyncRequestValidation.validateWait(wait)
        if wait > .zero { wake.start() }
        return try await waiters.livePull(space: space, after: cursor, wait: wait) { cursor in
            try await pull(space: space, after: cursor, limit: limit, collections: collections)
        }
    }

    /// How many live pulls the server holds now (for tests: a handshake instead of a sleep).
    public var heldPulls: Int { waiters.count }

    /// How many times the wake session has connected and set itself up (`LISTEN`, or its first
    /// read), and its server backend now, for tests that end it (`pg_terminate_backend`).
    package var wakeSession: (sessions: Int, backendProcessID: Int32?, failures: Int) {
        let status = wake.status
        return (status.sessions, status.backendProcessID, status.failures)
    }
}
