/// The protocol a device's sync talks through: push local operations, pull remote changes.
///
/// A space (one person's or one tenant's data) scopes everything: a server answers a request
/// of one space from that space's records, operations and counter only. `PostgresSyncServer`
/// (module `RecordKeeperPostgres`) implements it over PostgreSQL for servers and trusted
/// networks; `HTTPSyncServer` (module `RecordKeeper`) reaches it through a sync relay
/// (`recordkeeper-relay`) over HTTPS with a token, so that devices on the internet never hold
/// database credentials; ``InMemorySyncServer`` implements the same rules in memory, for tests.
///
/// ```swift
/// let outcomes = try await server.push(space: "alice", operations: pending)
/// var cursor = storedCursor
/// while true {
///     let page = try await server.pull(space: "alice", after: cursor, limit: 500)
///     apply(page.changes)          // with page.cursor, in one local transaction
///     cursor = page.cursor
///     if !page.hasMore { break }
/// }
/// ```
///
/// The guarantees (docs/SYNC.md has the details):
/// - **Exactly once.** An operation's ``SyncOperation/id`` is recorded with its outcome in the
///   same server transaction as its changes; a re-delivered operation is answered with the
///   outcome it got the first time (``SyncOutcome/isRedelivery``) and has no second effect; once
///   a compaction deleted that outcome, it is answered ``SyncResult/compacted(_:)``, still with
///   no second effect.
/// - **Whole or nothing.** All changes of one operation are applied together or none is.
/// - **Per-device order.** A device's operations are applied in the order of their
///   ``SyncOperation/sequence``; one whose sequence is not above the last one the server
///   recorded for the device (applied or conflicting) is refused.
/// - **Compare-and-set.** A change applies only if the record is still at the server version it
///   was based on (or the change is ``SyncWritePolicy/lastWriterWins``); otherwise the operation's
///   outcome is a conflict carrying the server's current value and version.
/// - **No skipped changes.** Pulling page after page from any cursor this protocol returned
///   delivers every change committed after it, however pushes interleave, and the cursor never
///   passes a change that was not delivered.
public protocol RecordSyncServer: Sendable {
    /// Applies `operations` in order and answers each with its outcome, in the same order.
    ///
    /// Operations received before (same id in this space; applied or conflicting) are not
    /// applied again: their outcome is the stored one, marked as a redelivery. (An
    /// out-of-order refusal is not stored: such an operation is judged again.) Sending many operations in one
    /// call is the efficient way: a server applies them in few round trips.
    ///
    /// - Throws: ``SyncError`` with code ``SyncError/Code/invalidRequest`` for bad input
    ///   (nothing of the request is applied), ``SyncError/Code/unreachable`` when the server
    ///   cannot be reached (the outcome is unknown: push the same operations again later),
    ///   ``SyncError/Code/unauthorized`` or ``SyncError/Code/forbidden`` (a relay refused the
    ///   token or what it asked; nothing was applied), or ``SyncError/Code/serverFailure``.
    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome]

    /// Returns up to `limit` changes committed after `cursor`, oldest first, with the cursor to
    /// pass next time. A page may also stop early once its payloads reach
    /// ``SyncPage/payloadBudget`` (``SyncPage/hasMore`` says so).
    ///
    /// Apply a page's changes and store its ``SyncPage/cursor`` in one local transaction; call
    /// again while ``SyncPage/hasMore``. Pulling again from an older cursor is harmless: the
    /// same or newer values come back.
    ///
    /// - Throws: ``SyncError`` (``SyncError/Code/invalidRequest`` for an empty space or a limit
    ///   outside 1...``SyncPage/maximumLimit``; ``SyncError/Code/behindHorizon`` for a cursor
    ///   behind the space's compaction horizon: pull from ``SyncCursor/start`` instead;
    ///   ``SyncError/Code/unreachable``; ``SyncError/Code/serverFailure``).
    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage

    /// Returns up to `limit` changes of `collections` committed after `cursor`, oldest first,
    /// with the cursor to pass next time; `nil` means every collection (the pull above).
    ///
    /// The cursor stays the space's: a complete page ends at the space's counter, however many
    /// changes of other collections it passed, and a page cut short ends at its last change.
    /// Pull with the same collections from a cursor a filtered pull returned; a device that
    /// syncs a collection more must pull it from the start (`RecordSync` does: see
    /// `RecordSync.start(space:collections:policy:)`). An empty set asks for no collection:
    /// no changes, the cursor at the space's counter.
    ///
    /// ```swift
    /// let page = try await server.pull(space: "alice", after: cursor, limit: 1000, collections: ["notes"])
    /// ```
    ///
    /// A server that implements only ``pull(space:after:limit:)`` gets a default that pulls
    /// every collection's pages and removes the others' changes (``SyncPullFilter``): the
    /// same answer, without the savings. It never hands other collections' changes to a
    /// caller that named collections.
    ///
    /// - Throws: ``SyncError``, as ``pull(space:after:limit:)``; ``SyncError/Code/invalidRequest``
    ///   also for a collection name that is empty or contains a NUL character, or more than
    ///   ``SyncPullFilter/maximumCollections`` names.
    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage

    /// A live pull: answers at once when the space has changes after `cursor` (of
    /// `collections`; `nil` means every collection); otherwise holds the request until one
    /// commits or `wait` passes, then answers an empty page.
    ///
    /// A live pull is what keeps a device up to date without asking again and again: call it
    /// in a loop, applying each page as ``pull(space:after:limit:collections:)`` describes.
    /// Whatever the wait, the answer obeys the same rules as an ordinary pull (no change is
    /// skipped, the cursor never passes a change not delivered); a server may answer an empty
    /// page before `wait` passes (a relay's own maximum wait, a restart), so an empty answer
    /// says nothing but "nothing yet".
    ///
    /// ```swift
    /// var cursor = storedCursor
    /// while !Task.isCancelled {
    ///     let page = try await server.pull(space: "alice", after: cursor, limit: 500, collections: nil, wait: .seconds(30))
    ///     apply(page.changes)          // with page.cursor, in one local transaction
    ///     cursor = page.cursor
    /// }
    /// ```
    ///
    /// A server that cannot hold a request gets a default that pulls again every
    /// ``SyncPage/defaultPollInterval`` until a change arrives or `wait` passes.
    ///
    /// - Throws: ``SyncError``, as ``pull(space:after:limit:collections:)``;
    ///   ``SyncError/Code/invalidRequest`` also for a `wait` below zero or above
    ///   ``SyncPage/maximumWait``. `CancellationError` when the calling task is cancelled while
    ///   it waits.
    func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage
}

extension RecordSyncServer {
    /// The default for servers that cannot filter: every collection's pages, with the other
    /// collections' changes removed (see ``SyncPullFilter/pull(after:collections:page:)``).
    ///
    /// - Throws: what ``pull(space:after:limit:)`` throws; ``SyncError/Code/invalidRequest``
    ///   for bad collection names.
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?
    ) async throws -> SyncPage {
        guard let collections else { return try await pull(space: space, after: cursor, limit: limit) }
        try SyncRequestValidation.validatePull(space: space, cursor: cursor, limit: limit, collections: collections)
        return try await SyncPullFilter.pull(after: cursor, collections: collections) { after in
            try await pull(space: space, after: after, limit: limit)
        }
    }
}

extension RecordSyncServer {
    /// The default live pull for servers that cannot hold a request: pulls again every
    /// ``SyncPage/defaultPollInterval`` (the last stretch shorter) until a page has changes
    /// or `wait` has passed.
    ///
    /// - Throws: what ``pull(space:after:limit:collections:)`` throws; ``SyncError/Code/invalidRequest``
    ///   for a `wait` out of range; `CancellationError` when cancelled while waiting.
    public func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try SyncRequestValidation.validateWait(wait)
        return try await SyncPage.polling(for: wait) { _ in
            try await pull(space: space, after: cursor, limit: limit, collections: collections)
        }
    }
}

extension SyncPage {
    /// The live pull of a server that cannot hold one: pulls with `pull` until a page has
    /// changes or more to come, or `wait` has passed, again every ``defaultPollInterval`` (the
    /// last stretch shorter) while `pollsAgain` says so. `pull` is told whether it pulls again
    /// (`HTTPSyncServer` asks a relay to hold the first one).
    ///
    /// - Throws: what `pull` throws; `CancellationError` when cancelled while waiting.
    package static func polling(
        for wait: Duration, pollsAgain: () async -> Bool = { true }, _ pull: (_ again: Bool) async throws -> SyncPage
    ) async throws -> SyncPage {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: wait)
        var again = false
        while true {
            let page = try await pull(again)
            let now = clock.now
            if !page.changes.isEmpty || page.hasMore || now >= deadline { return page }
            guard await pollsAgain() else { return page }
            try await Task.sleep(for: min(defaultPollInterval, now.duration(to: deadline)))
            again = true
        }
    }
}
