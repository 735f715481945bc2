import RecordKeeperSync

extension PostgresSyncServer {
    /// The spaces this database holds (those with a row in `recordkeeper_sync_spaces`: every
    /// space a push reached), in byte order after `after`, at most `limit` of them.
    ///
    /// ```swift
    /// var after = ""
    /// while case let spaces = try await server.spaces(after: after, limit: 500), let last = spaces.last {
    ///     after = last
    /// }
    /// ```
    ///
    /// - Throws: ``RecordKeeper/SyncError`` (``RecordKeeper/SyncError/Code/invalidRequest`` for a
    ///   limit below 1; ``RecordKeeper/SyncError/Code/unreachable``,
    ///   ``RecordKeeper/SyncError/Code/serverFailure``).
    public func spaces(after: String, limit: Int) async throws -> [String] {
        guard limit >= 1 else { throw SyncError(.invalidRequest, "a list of spaces needs a limit of at least 1, not \(limit)") }
        let timeout = timeout
        do {
            return try await withConnection { connection in
                try await connection.withTimeout(timeout) { connection in
                    let rows = try connection.execute(
                        "SELECT space FROM recordkeeper_sync_spaces WHERE space > $1 ORDER BY space LIMIT $2",
                        [.text(after), .int64(Int64(limit))], operation: "list the spaces")
                    return try (0..<rows.rowCount).map { try rows.string($0, 0) }
                }
            }
        } catch {
            throw Self.failure(error, "list the spaces")
        }
    }
}

extension PostgresSyncServer {
    /// Whether this database holds `space` (a push ever reached it).
    ///
    /// - Throws: ``RecordKeeper/SyncError`` (``RecordKeeper/SyncError/Code/unreachable``,
    ///   ``RecordKeeper/SyncError/Code/serverFailure``).
    public func holds(space: String) async throws -> Bool {
        let timeout = timeout
        do {
            return try await withConnection { connection in
                try await connection.withTimeout(timeout) { connection in
                    try connection.execute(
                        "SELECT EXISTS (SELECT 1 FROM recordkeeper_sync_spaces WHERE space = $1)", [.text(space)],
                        operation: "look for space \(space)"
                    ).bool(0, 0)
                }
            }
        } catch {
            throw Self.failure(error, "look for space \(space)")
        }
    }
}

extension PostgresSyncServer {
    /// Whether the database answers: `SELECT 1` on a pooled connection, checked out as a
    /// request's is and bounded by the server's timeout (the relay's health check). Never a
    /// connection a request holds, and never a wait without an end when the database hangs.
    ///
    /// - Throws: ``RecordKeeper/SyncError`` (``RecordKeeper/SyncError/Code/unreachable``,
    ///   ``RecordKeeper/SyncError/Code/serverFailure``).
    public func checkHealth() async throws {
        let timeout = timeout
        do {
            try await withConnection { connection in
                try await connection.withTimeout(timeout) { connection in
                    _ = try connection.execute("SELECT 1", operation: "health check")
                }
            }
        } catch {
            throw Self.failure(error, "health check")
        }
    }
}
