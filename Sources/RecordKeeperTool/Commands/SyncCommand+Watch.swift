import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `sync --watch`: continuous sync (`RecordSync.keepInSync`) until SIGINT or SIGTERM, one line
/// per round on standard output (docs/CLI.md "sync --watch"):
///
/// ```
/// up to date: pushed 1 operation(s) (1 change(s)), pulled 0 change(s), 0 new conflict(s)
/// offline: unreachable: …; attempt 2 failed, next attempt at 2026-12-01T22:50:03Z (in 1.6 s)
/// stopped
/// ```
///
/// With `--json`, one object per line: a round is `sync --json`'s document with `"state":
/// "upToDate"` or `"needsAttention"` first; `{"state":"offline","error":{"code","message"},
/// "failures","nextAttempt","retryIn"}`; `{"state":"stopped"}` at the end.
///
/// A server that cannot be reached at the start is waited for the same way, one offline line
/// per attempt (`connectWatching`). A signal ends it with exit 0; an error retrying cannot
/// mend ends it with that error's exit code (as `sync` exits).
extension SyncCommand {
    /// What the watch loop hears: an activity, or the end of continuous sync.
    private enum WatchEvent: Sendable {
        case activity(SyncActivity)
        case finished((any Error)?)
    }

    /// Connects as `connect` does; while the server cannot be reached (a transient
    /// `SyncError`), tries again after continuous sync's backoff (`SyncBackoff`, at least a
    /// relay's `Retry-After`), printing the same offline line as a failed round. Returns nil
    /// when a signal ended the wait; throws any other error (exit codes as `sync`'s).
    static func connectWatching(
        _ connect: @escaping @Sendable () async throws -> any RecordSyncServer, context: CommandContext,
        interruption: Interruption
    ) async throws -> (any RecordSyncServer)? {
        let backoff = SyncBackoff()
        var failures = 0
        while interruption.signalReceived == nil {
            do {
                return try await interruption.run { try await connect() }
            } catch let error as SyncError where error.isTransient && interruption.signalReceived == nil {
                failures += 1
                var delay = backoff.delay(afterFailures: failures, random: Double.random(in: 0..<1))
                if let asked = error.retryAfter { delay = max(delay, asked) }
                let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
                try writeOffline(error, next: Date().addingTimeInterval(seconds), failures: failures, context: context)
                do {
                    try await interruption.run { [delay] in try await Task.sleep(for: delay) }
                } catch is CancellationError {
                    continue  // a signal: the loop's condition ends it
                }
            } catch where interruption.signalReceived != nil {
                break
            }
        }
        return nil
    }

    /// The offline line (or JSON object) of a failed attempt.
    private static func writeOffline(_ error: SyncError, next: Date, failures: Int, context: CommandContext) throws {
        let retryIn = max(0, next.timeIntervalSinceNow)
        let at = ISO8601DateFormatter().string(from: next)
        if context.arguments.has("json") {
            var out = Array(#"{"state":"offline","error":{"code":"#.utf8) + JSONText.quoted(error.code.name)
            out += Array(#","message":"#.utf8) + JSONText.quoted(error.message) + Array("}".utf8)
            out += Array(#","failures":\#(failures),"nextAttempt":"#.utf8) + JSONText.quoted(at)
            out += Array(#","retryIn":\#(String(format: "%.3f", retryIn))}"#.utf8) + Array("\n".utf8)
            try context.output.write(out)
        } else if !context.quiet {
            try context.output.write(
                "offline: \(error.code): \(error.message); attempt \(failures) failed, next attempt at \(at) "
                    + "(in \(String(format: "%.1f", retryIn)) s)\n")
        }
        try context.output.flush()
    }

    /// The last line of a watch that a signal ended.
    static func writeStopped(_ context: CommandContext) throws {
        if context.arguments.has("json") {
            try context.output.write(Array(#"{"state":"stopped"}"#.utf8) + Array("\n".utf8))
        } else if !context.quiet {
            try context.output.write("stopped\n")
        }
    }

    /// Rounds until a signal; `recovery` is what `--recover` did before the first round (its
    /// line is in `opening`; the first round's JSON document names it).
    static func watch(
        _ sync: RecordSync, context: CommandContext, request: Request, opening: [String], recovery: SyncRecovery?,
        timeout: Duration, interruption: Interruption
    ) async throws -> ExitCode {
        let json = context.arguments.has("json")
        if !json, !context.quiet {
            for line in opening { try context.output.write(line + "\n") }
        }
        // A held pull must end before a request times out (the HTTP session's, or ours).
        let options = KeepInSyncOptions(pullWait: min(.seconds(25), timeout / 2))
        let (events, sink) = AsyncStream.makeStream(of: WatchEvent.self)
        let activities = sync.activity()
        // Ends once the activity that keepInSync publishes last (`.stopped`, after every
        // round's) was forwarded: `.finished` comes after it, so no round's line is lost.
        let (stopForwarded, stopSink) = AsyncStream.makeStream(of: Void.self)
        let forwarding = Task {
            defer { stopSink.finish() }
            var first = true  // the activity current before keepInSync started
            for await activity in activities {
                sink.yield(.activity(activity))
                if case .stopped = activity, !first { stopSink.finish() }
                first = false
            }
        }
        defer { forwarding.cancel() }
        let ran = Protected(false)
        let running = Task {
            var outcome: (any Error)?
            do {
                try await interruption.run {
                    ran.withLock { $0 = true }
                    try await sync.keepInSync(options)
                }
            } catch {
                outcome = error
            }
            // keepInSync publishes `.stopped` whenever its rounds ran (the two checks before
            // them, a second keepInSync and a bad wait, cannot fail here: the RecordSync is
            // this command's own, and the wait comes from a --timeout checked when read).
            if ran.withLock({ $0 }) { for await _ in stopForwarded {} }
            sink.yield(.finished(outcome))
        }
        do {
            return try await printRounds(
                events, sync, context: context, request: request, recovery: recovery)
        } catch {
            // No round outlives the command: the one running ends before the stores close.
            running.cancel()
            _ = await running.result
            throw error
        }
    }

    private static func printRounds(
        _ events: AsyncStream<WatchEvent>, _ sync: RecordSync, context: CommandContext, request: Request,
        recovery: SyncRecovery?
    ) async throws -> ExitCode {
        let json = context.arguments.has("json")
        var firstRound = true
        for await event in events {
            switch event {
            case .activity(.upToDate(let report)), .activity(.needsAttention(_, let report)):
                let status = try await sync.store.syncStatus()
                if json {
                    var round = request
                    if !firstRound { (round.newCollections, round.changedPolicy) = ([], []) }
                    let state = status.map { $0.conflicts > 0 } ?? false ? "needsAttention" : "upToDate"
                    let document = Self.json(
                        report: report, request: round, status: status,
                        recovery: firstRound ? recovery ?? report.recovery : report.recovery)
                    try context.output.write(Array(#"{"state":"#.utf8) + JSONText.quoted(state) + Array(",".utf8)
                                             + document.dropFirst())
                } else {
                    if !context.quiet {
                        for line in roundLines(report, unresolved: status?.conflicts ?? 0) {
                            try context.output.write(line + "\n")
                        }
                    }
                    for conflict in report.newConflicts { try context.output.write(conflictLine(conflict)) }
                }
                firstRound = false
                // A line per round, as it happens (someone watches it).
                try context.output.flush()
            case .activity(.offline(let error, let next, let failures)):
                // A round that recorded conflicts before it failed (its pull, say) names them.
                if !json {
                    for conflict in error.partialReport?.newConflicts ?? [] { try context.output.write(conflictLine(conflict)) }
                }
                try writeOffline(error, next: next, failures: failures, context: context)
            case .activity:
                continue
            case .finished(let error):
                if let error {
                    if let error = error as? SyncError {
                        throw ToolError(error, pending: await pendingAfterFailure(sync.store), touched: true)
                    }
                    throw error
                }
                try writeStopped(context)
                return .ok
            }
        }
        return .ok
    }

    /// The lines of one round: what it pushed and pulled, a resync, the conflicts left.
    static func roundLines(_ report: SyncReport, unresolved: Int) -> [String] {
        var lines: [String] = []
        if let recovery = report.recovery { lines.append(describe(recovery)) }
        let counts = "pushed \(report.pushedOperations) operation(s) (\(report.pushedChanges) change(s)), "
            + "pulled \(report.pulledChanges) change(s), \(report.newConflicts.count) new conflict(s)"
        if unresolved > 0 {
            lines.append("needs attention: \(counts); \(unresolved) unresolved conflict(s): see 'recordkeeper conflicts'")
        } else {
            lines.append("up to date: \(counts)")
        }
        if report.resynced {
            lines.append(
                "resynced: the server had compacted past this store's cursor; pulled the space's current state and "
                    + "removed \(report.removedAsCompacted) record(s) deleted meanwhile")
        }
        return lines
    }
}
