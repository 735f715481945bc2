import Foundation

extension RecordSync {
    /// What continuous sync does next.
    enum Round: Sendable {
        /// Push what is pending, then pull to the head (as ``sync()``).
        case full
        /// Apply a live-pulled page (and the pages after it) as ``pull()`` does.
        case live(SyncLivePage)
        /// Nothing to do: hold another live pull.
        case wait
    }

    /// Keeps the store in sync until the calling task is cancelled: pushes soon after local
    /// commits, holds a live pull otherwise, and backs off while the server cannot be reached.
    ///
    /// ```swift
    /// let syncing = Task { try await sync.keepInSync() }
    /// for await activity in sync.activity() { show(activity) }   // elsewhere, a screen
    /// syncing.cancel()                                          // leaving: it ends promptly
    /// ```
    ///
    /// Each **round** is what ``sync()`` or ``pull()`` does, through the same code, so a page
    /// is applied with its cursor in one local transaction, whole or not at all:
    /// - first, and after each local commit: push everything pending, then pull to the head.
    ///   Local commits are seen through the change streams of the synced collections
    ///   (``RecordStore/changes(in:)``), so commits of every writer of the store file count,
    ///   other processes included; a commit waits ``KeepInSyncOptions/pushDelay`` first, so a
    ///   burst goes in one push. A commit that leaves nothing to push (a pulled page) starts no
    ///   round.
    /// - otherwise it holds a live pull (``/RecordKeeperSync/RecordSyncServer/pull(space:after:limit:collections:wait:)``,
    ///   ``KeepInSyncOptions/pullWait`` long) and applies the page it answers; an empty answer
    ///   starts no round. A local commit cancels the held pull (on Linux it is abandoned, its
    ///   answer dropped: see `AbandonableRequest`).
    ///
    /// Its state goes to ``activity()``: ``SyncActivity/syncing`` while a round runs, then
    /// ``SyncActivity/upToDate(_:)`` or ``SyncActivity/needsAttention(_:_:)`` (unresolved
    /// conflicts) with the round's report. A round that fails with
    /// ``/RecordKeeperSync/SyncError/Code/unreachable`` or ``/RecordKeeperSync/SyncError/Code/serverFailure`` is tried again after a
    /// backoff (``KeepInSyncOptions/backoff``, with jitter; at least a relay's `Retry-After`),
    /// announced as ``SyncActivity/offline(_:nextAttempt:failures:)``; the next success resets
    /// it. Nothing local is lost meanwhile: local commits stay queued.
    ///
    /// **Errors retrying cannot mend stop it**: a token refused or not granting the request
    /// (``/RecordKeeperSync/SyncError/Code/unauthorized``, ``/RecordKeeperSync/SyncError/Code/forbidden``), wrong settings or
    /// credentials (``/RecordKeeperSync/SyncError/Code/configuration``, ``/RecordKeeperSync/SyncError/Code/authentication``), a
    /// newer server schema, another store writing as this device
    /// (``/RecordKeeperSync/SyncError/Code/forkedDevice``: ``recover()``), a refused request, a local storage
    /// failure. The activity becomes ``SyncActivity/stopped(_:)`` with the error and the call
    /// throws it; mend the cause (a new token, `recover()`) and call it again.
    ///
    /// **Cancellation** ends it promptly: a held pull or a backoff is abandoned; a page being
    /// applied is rolled back whole (its cursor with it) or has committed whole; pages applied
    /// before stay. The activity becomes `.stopped(nil)` and the call returns normally.
    ///
    /// **One at a time per `RecordSync`**: a second call while one runs is refused. Its rounds
    /// take turns with the other calls of this `RecordSync` (``sync()`` still works meanwhile).
    /// Continuous syncs of other `RecordSync`s or processes on the same store file are safe, as
    /// concurrent ``sync()`` calls are (an operation answered by one is skipped by the other, a
    /// page pulled twice is skipped), but only duplicate requests: run one per store file.
    ///
    /// Collections added by ``start(space:collections:policy:)`` of this `RecordSync` while it
    /// runs start a round (their records are pushed and pulled, then followed); through another
    /// `RecordSync` or process, from the next round. A conflict resolved by
    /// keeping the server's value (which writes nothing) leaves
    /// ``SyncActivity/needsAttention(_:_:)`` at the next round.
    ///
    /// - Throws: ``/RecordKeeperSync/SyncError``: ``/RecordKeeperSync/SyncError/Code/invalidRequest`` when this `RecordSync` keeps
    ///   the store in sync already, sync has not started for the store, or
    ///   ``KeepInSyncOptions/pullWait`` is out of range; a stopping error as above;
    ///   ``RecordStoreError``. Never `CancellationError`.
    public func keepInSync(_ options: KeepInSyncOptions = KeepInSyncOptions()) async throws {
        guard !keepingInSync else {
            throw SyncError(
                .invalidRequest, "this RecordSync keeps the store in sync already: one keepInSync at a time per RecordSync")
        }
        try SyncRequestValidation.validateWait(options.pullWait)
        keepingInSync = true
        var commits = SyncCommitFollower(signal: localCommits)
        defer {
            keepingInSync = false
            commits.stop()
        }
        do {
            try await loop(options, commits: &commits)
        } catch {
            activityHub.publish(.stopped(error))
            throw error
        }
        activityHub.publish(.stopped(nil))
    }

    /// The activity of continuous sync (``keepInSync(_:)``): the current one first, then every
    /// change, in order. Each call is a new stream; it ends when its consumer stops or this
    /// `RecordSync` is released, and goes on across calls of `keepInSync`. A stream keeps
    /// every activity its consumer has not read yet (at most a few per round): read it, or
    /// drop it.
    public nonisolated func activity() -> AsyncStream<SyncActivity> {
        activityHub.subscribe()
    }

    /// Rounds until cancelled; throws a stopping error.
    private func loop(_ options: KeepInSyncOptions, commits: inout SyncCommitFollower) async throws {
        await commits.follow(try await storedPullState().collections, in: store)
        var failures = 0
        var next = Round.full
        // The commit generation before the last full round read what is pending.
        var checked = commits.signal.generation
        while !Task.isCancelled {
            do {
                if case .wait = next {} else {
                    activityHub.publish(.syncing)
                    if case .full = next { checked = commits.signal.generation }
                    let report = try await run(next)
                    failures = 0
                    await commits.follow(try await storedPullState().collections, in: store)
                    activityHub.publish(try await settled(report))
                }
                next = try await change(after: checked, signal: commits.signal, options)
                if case .full = next, options.pushDelay > .zero { try await options.sleep(options.pushDelay) }
            } catch {
                if Task.isCancelled { return }
                guard let error = error as? SyncError, error.isTransient else { throw error }
                failures += 1
                var delay = options.backoff.delay(afterFailures: failures, random: options.random())
                if let asked = error.retryAfter { delay = max(delay, asked) }
                let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
                activityHub.publish(
                    .offline(error, nextAttempt: options.now().addingTimeInterval(seconds), failures: failures))
                do {
                    try await options.sleep(delay)
                } catch {
                    return
                }
                next = .full
            }
        }
    }

    /// One round, in this client's turn.
    private func run(_ round: Round) async throws -> SyncReport {
        await takeTurn()
        defer { releaseTurn() }
        let settings = try await boundSettings()
        var report = SyncReport(recovery: settings.recovery)
        do {
            switch round {
            case .full:
                try await push(settings, into: &report)
                try await pull(settings, into: &report)
            case .live(let page):
                try await pull(settings, into: &report, live: page)
            case .wait:
                report.cursor = try await storedCursor()
            }
        } catch var error as SyncError {
            // An offline or stopped activity still tells what the round did (its conflicts).
            error.attach(report)
            throw error
        }
        return report
    }

    /// The activity after a round that did `report`.
    private func settled(_ report: SyncReport) async throws -> SyncActivity {
        let conflicts = try await store.syncConflicts()
        return conflicts.isEmpty ? .upToDate(report) : .needsAttention(conflicts, report)
    }

    /// Holds a live pull from the stored cursor until it answers (`.live`, or `.wait` for an
    /// empty page) or a local commit leaves something to push (`.full`), whichever comes
    /// first; the other is cancelled and waited for.
    private func change(after generation: UInt64, signal: OutboxSignal, _ options: KeepInSyncOptions) async throws -> Round {
        let (cursor, seen, synced, resyncing) = try await storedPullState()
        // A resync under way (interrupted) goes on from the start.
        if resyncing { return .full }
        let space = try await boundSettings().space
        let filter = Self.pullFilter(synced)
        let (server, store, wait) = (self.server, self.store, options.pullWait)
        return try await withThrowingTaskGroup(of: Round.self) { group in
            group.addTask {
                do {
                    let page = try await server.pull(
                        space: space, after: cursor, limit: Self.pullLimit, collections: filter, wait: wait)
                    if page.changes.isEmpty, !page.hasMore { return .wait }
                    return .live(SyncLivePage(page: page, after: cursor, collections: filter, seen: seen))
                } catch let error as SyncError where error.code == .behindHorizon {
                    // Compacted past the cursor: a full round resyncs.
                    return .full
                }
            }
            group.addTask {
                try await Self.pendingCommit(after: generation, signal: signal, store: store, synced: synced)
                return .full
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return .wait }
            return first
        }
    }

    /// Returns once a commit after `generation` left something to push or changed the synced
    /// collections from `synced` (or when cancelled).
    private static func pendingCommit(
        after generation: UInt64, signal: OutboxSignal, store: RecordStore, synced: Set<String>
    ) async throws {
        var seen = generation
        while true {
            await signal.wait(after: seen)
            try Task.checkCancellation()
            seen = signal.generation
            let changed = try await store.performRead(.syncPush, collection: nil) { source in
                guard let engine = source.engine, try engine.syncState.exists() else { return false }
                return try engine.syncQueue.hasChanges() || Set(try engine.syncState.collections().keys) != synced
            }
            if changed { return }
        }
    }
}

/// Follows the change streams of the synced collections and counts their elements on one
/// signal (``RecordSync``'s `localCommits`, which `start` and `recover` tell too): the commits
/// continuous sync pushes after (``RecordSync/keepInSync(_:)``).
///
/// An `OutboxSignal` is the generation counter with waiters it needs: read the generation
/// before looking for work, then wait for a newer one, and no commit in between is missed.
struct SyncCommitFollower {
    let signal: OutboxSignal
    private var following: [String: Task<Void, Never>] = [:]

    init(signal: OutboxSignal) {
        self.signal = signal
    }

    /// Follows the collections of `synced` not followed yet; each stream is registered and
    /// positioned when this returns.
    ///
    /// A collection newly followed tells the signal once: a commit to it that came after the
    /// round's push read the queue and before its stream was registered (an app that starts a
    /// collection and writes to it at once) tells no stream, and would otherwise wait for some
    /// other commit or pulled page to be pushed.
    mutating func follow(_ synced: Set<String>, in store: RecordStore) async {
        var added = false
        for name in synced.sorted() where following[name] == nil {
            following[name] = Self.count(await store.changes(in: name), on: signal)
            added = true
        }
        if added { signal.notify() }
    }

    /// Stops following (each stream ends with its task).
    mutating func stop() {
        for task in following.values { task.cancel() }
        following = [:]
    }

    private static func count(_ changes: AsyncStream<RecordChanges>, on signal: OutboxSignal) -> Task<Void, Never> {
        Task {
            for await _ in changes { signal.notify() }
        }
    }
}
