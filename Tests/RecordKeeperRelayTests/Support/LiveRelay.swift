import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import TestHelpers
import Testing

/// A `recordkeeper-relay serve` process on loopback over a private schema of the test
/// PostgreSQL (migrated by `recordkeeper-relay migrate` first), with the secret to mint its
/// tokens.
struct LiveRelay {
    static let secret = Array("the live relay tests' secret, 32+ bytes".utf8)

    let directory: URL
    /// The schema's conninfo (its `search_path` is the private schema).
    let conninfo: String
    let secretFile: URL
    private(set) var process: RelayProcess

    var url: URL { URL(string: process.url)! }

    /// A token for `space`, valid for an hour from now unless `expiresIn` says otherwise.
    static func token(
        _ space: String, readOnly: Bool = false, collections: Set<String>? = nil, expiresIn: TimeInterval = 3600
    ) throws -> String {
        let access = RelayAccess(space: space, readOnly: readOnly, collections: collections)
        return try JWTSigner(key: .hs256(secret: secret)).sign(access.claims(expiresAt: Date().timeIntervalSince1970 + expiresIn))
    }

    /// A client of this relay holding a token for `space`.
    func client(_ space: String) throws -> HTTPSyncServer {
        let token = try Self.token(space)
        return HTTPSyncServer(url: url) { token }
    }

    /// Starts another relay process over the same schema (after ``kill()``).
    mutating func restart(_ arguments: [String] = []) async throws {
        process = try await RelayProcess.serve(Self.serveArguments(conninfo, secretFile) + arguments, in: directory)
    }

    static func serveArguments(_ conninfo: String, _ secretFile: URL) -> [String] {
        ["--database", conninfo, "--listen", "127.0.0.1:0", "--jwt-secret-file", secretFile.path, "--pool", "2"]
    }
}

/// Runs `body` with a live relay (see ``LiveRelay``), terminated afterwards; `serveConninfo`
/// turns the schema's conninfo into the one `serve` gets (another role's, say).
func withLiveRelay(
    in directory: URL, serveConninfo: (String) async throws -> String = { $0 },
    _ body: (inout LiveRelay) async throws -> Void
) async throws {
    try await TestPostgres.withPrivateSchema(prefix: "relay_e2e") { conninfo, _ in
        let secretFile = directory.appendingPathComponent("relay-secret")
        try Data(LiveRelay.secret).write(to: secretFile)
        let migrated = try await RelayProcess.run(["migrate", "--database", conninfo])
        #expect(migrated.status == 0, "\(migrated.error)")
        let serving = try await serveConninfo(conninfo)
        let process = try await RelayProcess.serve(LiveRelay.serveArguments(serving, secretFile), in: directory)
        var relay = LiveRelay(directory: directory, conninfo: serving, secretFile: secretFile, process: process)
        do {
            try await body(&relay)
        } catch {
            await relay.process.kill()
            throw error
        }
        if relay.process.child.process.isRunning {
            let stopped = try await relay.process.terminate()
            #expect(stopped.status == 0, "\(stopped.log)")
        }
    }
}

/// Returns once a PostgreSQL backend waits for a lock the backend `holder` holds (the relay's
/// push behind a push the test holds open), as `pg_blocking_pids` sees it.
func waitUntilBlocked(by holder: Int32) async throws {
    let monitor = try await TestPostgres.connection()
    try await waitUntil("a push waits for the held lock", polling: .milliseconds(5)) {
        try await monitor.transaction(operation: "watch locks") { connection in
            try connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [.int64(Int64(holder))]
            ).int64(0, 0)
        } > 0
    }
}
