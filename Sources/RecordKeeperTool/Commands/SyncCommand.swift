import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperCommandLine

/// `sync --server CONNINFO --space SPACE [--collections a,b] [--last-writer-wins] [--recover]
/// [--timeout SECONDS] [--json] [--watch]`: pushes what is pending, then pulls to the server's head, through
/// `RecordSync` and a `PostgresSyncServer`; with `--server http(s)://… --token-file F`, through
/// a relay (`HTTPSyncServer`) in the token's space; with `--recover`, the store first takes a
/// new device id (`RecordSync.recover()`); with `--json`, what it did as one JSON document
/// (`SyncCommand+JSON.swift`); with `--watch`, continuous sync until a signal
/// (`SyncCommand+Watch.swift`).
///
/// Everything that can be checked without the server is checked first (arguments, the space
/// and collections the store already syncs), so bad input changes nothing. The server is
/// reached before the store is touched, so an unreachable server (exit 69) leaves the store as
/// it was: not even created when it did not exist.
enum SyncCommand {
    /// The environment variable `--server` defaults to.
    static let serverVariable = "RECORDKEEPER_SYNC_SERVER"

    /// What the command line asks for, checked against the store's recorded sync settings.
    struct Request: Equatable {
        var conninfo: String
        /// The space to sync: given, or the one the store already syncs.
        var space: String
        /// Collections to start syncing now.
        var newCollections: [String] = []
        /// Collections already syncing whose policy changes to ``policy``.
        var changedPolicy: [String] = []
        var policy: SyncConflictPolicy

        /// What `RecordSync.start` is called with (nothing when empty).
        var toStart: [String] { newCollections + changedPolicy }
    }

    static func run(_ context: CommandContext) async throws -> ExitCode {
        let arguments = context.arguments
        guard let conninfo = arguments.values["server"] ?? context.environment[serverVariable], !conninfo.isEmpty
        else {
            throw UsageError(
                message: "sync needs --server CONNINFO or a relay's http(s) URL (or \(serverVariable) in the environment)",
                command: "sync")
        }
        // An http(s) URL is a relay, whose token names the space; anything else is a conninfo
        // (libpq's key=value form, or its postgres:// and postgresql:// URIs): a URL of another
        // scheme is neither, a setting to correct.
        if let scheme = urlScheme(conninfo), !isRelayURL(conninfo), !["postgres", "postgresql"].contains(scheme) {
            let source = arguments.values["server"] == nil ? serverVariable : "--server"
            throw ToolError(
                .configuration, "\(source) \(quoted(HTTPClientSupport.withoutPassword(conninfo))) is a \(scheme):// URL: a relay is reached with an http:// or "
                    + "https:// URL, a PostgreSQL server with a connection string or a postgresql:// URI; nothing was changed")
        }
        let relay = isRelayURL(conninfo) ? try Self.relay(conninfo, context: context) : nil
        if relay == nil {
            if arguments.values["token-file"] != nil {
                throw UsageError(message: "--token-file is for a relay's http(s) URL, not a connection string", command: "sync")
            }
            do {
                try PostgresConnection.validate(conninfo: conninfo)
            } catch {
                let source = arguments.values["server"] == nil ? serverVariable : "--server"
                throw ToolError(.configuration, "\(source) is not a connection string libpq can read: \(error.message); "
                                + "nothing was changed")
            }
        }
        var timeout = PostgresSyncServer.defaultTimeout
        if let text = arguments.values["timeout"] {
            guard let seconds = Int(text), seconds > 0, seconds <= 86_400 else {
                throw UsageError(message: "--timeout needs a number of seconds from 1 to 86400, not \(quoted(text))",
                                 command: "sync")
            }
            timeout = .seconds(seconds)
        }
        let recover = arguments.has("recover")
        let collections = try parseCollections(arguments.values["collections"])
        var space = arguments.values["space"]
        if let space, space.isEmpty {
            throw ToolError(.dataError, "--space must not be empty; nothing was changed")
        }
        if let relay {
            // Through a relay the space is the token's.
            // Compared in NFC: the relay normalizes the token's space, as a store normalizes
            // the space it syncs (docs/SYNC.md, "Space names are normalized").
            if let space, space.precomposedStringWithCanonicalMapping != relay.space.precomposedStringWithCanonicalMapping {
                throw ToolError(.dataError, "--space \(quoted(space)) is not the token's space \(quoted(relay.space)): "
                                + "through a relay a store syncs the space its token grants; nothing was changed")
            }
            space = relay.space
        }
        let policy: SyncConflictPolicy = arguments.has("last-writer-wins") ? .lastWriterWins : .report

        // The store's settings, read without writing; a missing store has none (and is not
        // created unless the sync goes ahead).
        let holdsStore: Bool
        switch try context.store.state() {
        case .nonRegular(let kind): throw StoreAccess.notAStoreFile(context.store.path, kind)
        case .missing, .emptyFile: holdsStore = false
        case .file: holdsStore = true
        }
        let store = try context.store.writableStore()
        let status = holdsStore ? try await store.syncStatus() : nil
        let request = try plan(
            conninfo: conninfo, space: space, collections: collections, policy: policy, status: status,
            storePath: context.store.path)
        if recover, status == nil {
            throw ToolError(.dataError, "\(context.store.path) does not sync yet: --recover has nothing to recover; "
                            + "nothing was changed")
        }

        // Every collection this sync pulls: those it starts and those the store already syncs.
        let pulled = Set(request.newCollections).union(status?.collections.keys ?? [:].keys)
        let connect: @Sendable () async throws -> any RecordSyncServer = { [conninfo = request.conninfo, timeout] in
            if let relay { return try await Self.connect(relay, timeout: timeout, collections: pulled) }
            return try await PostgresSyncServer.connect(conninfo, timeout: timeout, notices: { notice in
                // The tool's own stderr line, never libpq's unprefixed one.
                StandardError.writeLine("recordkeeper: server \(notice)")
            })
        }
        let watching = arguments.has("watch") ? Interruption(activity: "stopping sync --watch") : nil
        defer { watching?.end() }
        let server: any RecordSyncServer
        do {
            if let watching {
                // Watching waits for a server that does not answer yet, as it does later on.
                guard let connected = try await connectWatching(connect, context: context, interruption: watching) else {
                    try writeStopped(context)
                    return .ok
                }
                server = connected
            } else {
                server = try await connect()
            }
        } catch let error as SyncError {
            throw ToolError(error, pending: status?.pendingOperations, touched: false)
        }
        if let relay, relay.readOnly {
            // Starting a collection that holds records here queues them for upload: with a
            // read-only token they would stay pending. Refused before the store is touched.
            let starting = Set(request.newCollections)
            let uploads = starting.isEmpty || !holdsStore
                ? [] : try await store.collections().filter { starting.contains($0.name) && $0.recordCount > 0 }
            try Self.requirePushable(relay, pending: status?.pendingOperations ?? 0, starting: uploads)
        }
        let sync = RecordSync(store: store, server: server)
        var lines: [String] = []
        var recovery: SyncRecovery?
        do {
            if recover { recovery = try await sync.recover() }
            if !request.toStart.isEmpty {
                try await sync.start(space: request.space, collections: request.toStart, policy: request.policy)
            }
        } catch let error as SyncError {
            // A recovery that committed (a new device id) is said first, and the message does
            // not claim the store untouched.
            if let recovery, !context.quiet, !arguments.has("json") { try context.output.write(describe(recovery) + "\n") }
            throw ToolError(error, pending: status?.pendingOperations, touched: recovery != nil)
        }
        if let recovery { lines.append(describe(recovery)) }
        if let watching {
            return try await watch(
                sync, context: context, request: request, opening: lines + startedLines(request), recovery: recovery,
                timeout: timeout, interruption: watching)
        }
        let report: SyncReport
        do {
            report = try await sync.sync()
        } catch let error as SyncError {
            // What is said about the failure; a failure to say it (a busy store, a closed
            // standard output) never replaces the sync's own error.
            let pending = await pendingAfterFailure(store)
            // What was already done (a new device id taken, collections started) is said first.
            // Not with --json, whose failures print nothing on standard output.
            let prose = !context.quiet && !arguments.has("json")
            do {
                if prose, let recovery { try context.output.write(describe(recovery) + "\n") }
                if prose { for line in startedLines(request) { try context.output.write(line + "\n") } }
                // Conflicts its push recorded before the failure are in the store: say so, as a
                // sync that succeeds does (not with --json, whose failures print nothing).
                if !arguments.has("json") {
                    for conflict in error.partialReport?.newConflicts ?? [] { try context.output.write(conflictLine(conflict)) }
                }
            } catch {
                StandardError.writeLine("recordkeeper: could not write what the sync did before it failed: \(error)")
            }
            throw ToolError(error, pending: pending, touched: true)
        }
        // Committed: a failure to print from here on only loses the output (see WriteNote).
        context.written.set()
        if let automatic = report.recovery { lines.append(describe(automatic)) }
        lines += startedLines(request)
        let after = try await store.syncStatus()
        lines.append(
            "pushed \(report.pushedOperations) operation(s) (\(report.pushedChanges) change(s)), "
                + "pulled \(report.pulledChanges) change(s), \(report.newConflicts.count) new conflict(s)")
        if report.resynced {
            lines.append(
                "resynced: the server had compacted past this store's cursor; pulled the space's current state and "
                    + "removed \(report.removedAsCompacted) record(s) deleted meanwhile")
        }
        if let after, after.conflicts > 0 {
            lines.append("\(after.conflicts) unresolved conflict(s): see 'recordkeeper conflicts'")
        }
        if arguments.has("json") {
            try context.output.write(json(report: report, request: request, status: after, recovery: recovery ?? report.recovery))
            return .ok
        }
        if !context.quiet {
            for line in lines { try context.output.write(line + "\n") }
        }
        // New conflicts are printed even with --quiet: a value was set aside.
        for conflict in report.newConflicts { try context.output.write(conflictLine(conflict)) }
        return .ok
    }

    /// The line of a new conflict: `conflict<TAB>collection<TAB>key<TAB>server version N`.
    static func conflictLine(_ conflict: SyncRecordConflict) -> String {
        "conflict\t\(JSONText.displayName(conflict.collection))\t\(JSONText.displayName(conflict.key))\t"
            + "server version \(conflict.serverVersion.map(String.init(describing:)) ?? "-")\n"
    }

    /// The lines telling which collections started syncing and whose policy changed.
    static func startedLines(_ request: Request) -> [String] {
        var lines: [String] = []
        let policyNote = request.policy == .lastWriterWins ? " (last writer wins)" : ""
        if !request.newCollections.isEmpty {
            lines.append("started syncing \(request.newCollections.map(quoted).joined(separator: ", ")) "
                         + "with space \(quoted(request.space))\(policyNote)")
        }
        if !request.changedPolicy.isEmpty {
            lines.append("policy of \(request.changedPolicy.map(quoted).joined(separator: ", ")) set to "
                         + "\(request.policy.rawValue)")
        }
        return lines
    }

    /// One line telling that the store took a new device id, and why.
    /// The operations still pending after a failed sync, for its message; nil, said on
    /// stderr, when the store cannot tell now: that never replaces the sync's own error.
    static func pendingAfterFailure(_ store: RecordStore) async -> Int? {
        do {
            return try await store.syncStatus()?.pendingOperations
        } catch {
            StandardError.writeLine("recordkeeper: could not read the store's sync status afterwards: \(error)")
            return nil
        }
    }

    static func describe(_ recovery: SyncRecovery) -> String {
        let why =
            switch recovery.reason {
            case .requested: "recovered"
            case .copied: "this store file is a copy of another device's store (a backup or a copied file)"
            case .unbound: "this store's device id was not bound to its file yet (it synced with an older version)"
            }
        return "\(why): it syncs as device \(recovery.device) now"
            + (recovery.previousDevice.map { " (was \($0))" } ?? "")
            + "; \(recovery.reissuedOperations) pending operation(s) go as the new device's, based on what the store "
            + "had seen, so an edit made meanwhile is a reported conflict"
    }

    /// `--collections a,b`: nil when not given; names not empty and not repeated.
    static func parseCollections(_ text: String?) throws(ToolError) -> [String]? {
        guard let text else { return nil }
        let names = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { String($0).trimmingCharacters(in: .whitespaces) }
        guard !names.contains(where: \.isEmpty) else {
            throw ToolError(.dataError, "--collections needs collection names separated by commas, "
                            + "none of them empty (got \(quoted(text))); nothing was changed")
        }
        var seen = Set<String>()
        for name in names where !seen.insert(name).inserted {
            throw ToolError(.dataError, "--collections names \(quoted(name)) twice; nothing was changed")
        }
        return names
    }

    /// Checks the command line against what the store already syncs: the first sync needs a
    /// space and collections; later syncs keep their space, and the collections they name get
    /// the policy the command line gives (`--last-writer-wins` or the default, report).
    /// Every problem is exit 65 and nothing is changed.
    static func plan(
        conninfo: String, space: String?, collections: [String]?, policy: SyncConflictPolicy,
        status: SyncStatus?, storePath: String
    ) throws(ToolError) -> Request {
        if let space, space.isEmpty {
            throw ToolError(.dataError, "--space must not be empty; nothing was changed")
        }
        guard let status else {
            guard let space, let collections else {
                let missing = [space == nil ? "--space SPACE" : nil, collections == nil ? "--collections a,b" : nil]
                    .compactMap { $0 }.joined(separator: " and ")
                throw ToolError(.dataError, "\(storePath) does not sync yet: its first sync needs \(missing) "
                                + "(the collections to sync); nothing was changed")
            }
            return Request(conninfo: conninfo, space: space, newCollections: collections, policy: policy)
        }
        if let space, space != status.space {
            throw ToolError(.dataError, "\(storePath) syncs space \(quoted(status.space)), not \(quoted(space)); "
                            + "a store syncs one space (use another store for \(quoted(space))); nothing was changed")
        }
        if policy == .lastWriterWins, collections == nil {
            throw ToolError(.dataError, "--last-writer-wins applies to the collections named with --collections; "
                            + "nothing was changed")
        }
        var request = Request(conninfo: conninfo, space: status.space, policy: policy)
        for name in collections ?? [] {
            if let existing = status.collections[name] {
                if existing != policy { request.changedPolicy.append(name) }
            } else {
                request.newCollections.append(name)
            }
        }
        return request
    }
}

extension ToolError {
    /// A sync server failure as the tool reports it: unreachable is exit 69 with what stays
    /// pending locally, a bad request 65, a store the server refused as another device's copy 65
    /// (run --recover), refused credentials 77 (a relay's refused token or request too), wrong
    /// settings 78. A message never claims more
    /// than it knows: a server failure says what stays pending, not that nothing was lost.
    ///
    /// - Parameters:
    ///   - pending: local operations waiting for the server, when known.
    ///   - touched: whether the sync had begun changing the store (pulled pages applied so
    ///     far stay: each page is applied whole with its cursor).
    init(_ error: SyncError, pending: Int?, touched: Bool) {
        let queue = pending.map { " \($0) local operation(s) stay pending;" } ?? ""
        switch error.code {
        case .unreachable where HTTPClientSupport.isTLSSettingsFailure(error.underlying):
            // A certificate this machine does not trust, or TLS against a plain-HTTP server:
            // settings to correct (docs/RELAY.md "Trusting the relay's certificate").
            let local = touched ? "nothing local was lost" : "local data untouched"
            self.init(.configuration, "the sync server could not be reached: \(error.message); trying again does not "
                      + "help; \(local);\(queue) see \"Trusting the relay's certificate\" in docs/RELAY.md")
        case .unreachable:
            let local = touched
                ? "nothing local was lost (what was applied before the connection broke stays);\(queue) run sync again later"
                : "local data untouched;\(queue) run sync again later"
            self.init(.storeRefused, "the sync server could not be reached: \(error.message); \(local)")
        case .invalidRequest:
            // Once the sync began (the store started syncing collections, pages were pulled),
            // the store is not as it was: the message says what it can.
            let local = touched
                ? "what this sync did before the refusal stays in the store;\(queue) correct what the message names"
                : "nothing was changed"
            self.init(.dataError, "invalid sync request: \(error.message); \(local)")
        case .newerServerSchema:
            let local = touched ? "what this sync did before stays in the store" : "local data untouched"
            self.init(.storeRefused, "the sync server is newer than this tool: \(error.message); \(local)")
        case .configuration:
            let local = touched ? "what this sync did before stays in the store" : "local data untouched"
            self.init(.configuration, "the sync server settings are wrong: \(error.message); correct --server (or "
                      + "\(SyncCommand.serverVariable)): trying again does not help; \(local)")
        case .authentication:
            let local = touched ? "what this sync did before stays in the store" : "local data untouched"
            self.init(.noPermission, "the sync server refused the credentials: \(error.message); trying again does "
                      + "not help; \(local)")
        case .unauthorized:
            let local = touched ? "what this sync did before the refusal stays in the store" : "local data untouched"
            self.init(.noPermission, "the relay refused the token: \(error.message); trying again with it does not "
                      + "help; \(local);\(queue) sync again with a new token")
        case .forbidden:
            let local = touched ? "what this sync did before the refusal stays in the store" : "local data untouched"
            self.init(.noPermission, "the relay refused the request: \(error.message); trying again with this token "
                      + "does not help; \(local);\(queue) sync again with a token that grants it")
        case .forkedDevice:
            self.init(.dataError, "\(error.message);\(queue) run 'recordkeeper sync --recover'")
        default:
            self.init(.storeRefused, "the sync server failed the request: \(error.message);\(queue) "
                      + "what was synced before the failure stays applied")
        }
    }
}
