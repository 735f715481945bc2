import Foundation
import RecordKeeper
import RecordKeeperRelay
import RecordKeeperTestSupport
import Testing

/// `recordkeeper sync` whose push records a conflict and whose pull then fails: the command
/// fails (exit 69, unreachable), and still names the conflict its push kept in the store
/// (`SyncError.partialReport`). An in-process relay over an in-memory server: no PostgreSQL.
@Suite(.timeLimit(.minutes(5)))
struct SyncToolFailedPullTests {
    private static let secret = Array("the failed pull test's secret, 32+ bytes".utf8)

    @Test func `a sync whose pull fails after its push names the conflict the push recorded`() async throws {
        try await withTemporaryDirectory { directory in
            let executable = try #require(BuildProducts.executable(named: "recordkeeper", override: "RECORDKEEPER_BINARY"))
            let token = try JWTSigner(key: .hs256(secret: Self.secret))
                .sign(RelayAccess(space: "home").claims(expiresAt: Date().timeIntervalSince1970 + 3600))
            let tokenFile = directory.appendingPathComponent("token")
            try Data((token + "\n").utf8).write(to: tokenFile)
            let store = directory.appendingPathComponent("phone.sqlite")

            // Another device wrote "today" first: the phone's new "today" conflicts with it.
            let inner = InMemorySyncServer()
            _ = try await inner.push(space: "home", operations: [.writing(["today": "theirs"], device: "laptop", sequence: 1)])
            var verifier = JWTVerifier.Configuration(key: try .hs256(secret: Self.secret))
            verifier.now = { Date() }
            var configuration = SyncRelay.Configuration(verifier: JWTVerifier(verifier))
            configuration.log = { _ in }
            var http = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
            http.log = { _ in }
            http.relaxedForTests()
            let relay = try SyncRelay(server: PullsFailAfterTokenCheck(inner), configuration: configuration).serve(http)

            let environment: [String: String?] = [
                "RECORDKEEPER_SYNC_SERVER": nil, "RECORDKEEPER_SYNC_TOKEN": nil, "RECORDKEEPER_STORE": nil,
            ]
            let put = try await ChildProcess.run(
                executable, ["--store", store.path, "put", "notes", "today", #""mine""#], in: directory,
                environment: environment)
            #expect(put.status == 0, "\(put.stderr)")
            let sync = try await ChildProcess.run(
                executable,
                [
                    "--store", store.path, "sync", "--server", "http://127.0.0.1:\(relay.port)", "--token-file",
                    tokenFile.path, "--collections", "notes",
                ],
                in: directory, environment: environment)
            #expect(sync.status == 69, "\(sync.stderr)")
            #expect(sync.output.contains("conflict\tnotes\ttoday\tserver version 1"), "\(sync.output)")
            #expect(sync.stderr.contains("could not be reached"), "\(sync.stderr)")

            let conflicts = try await ChildProcess.run(
                executable, ["--store", store.path, "conflicts"], in: directory, environment: environment)
            await relay.shutdown(gracePeriod: .seconds(5))
            #expect(conflicts.output.contains("notes\ttoday"), "\(conflicts.output)")
        }
    }
}

/// Passes pushes and the tool's token check (a pull of one change) to `inner`; every other
/// pull fails as an unreachable database would.
struct PullsFailAfterTokenCheck: RecordSyncServer {
    let inner: any RecordSyncServer

    init(_ inner: any RecordSyncServer) { self.inner = inner }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        guard limit == 1 else { throw SyncError(.unreachable, "test: the database went away after the push") }
        return try await inner.pull(space: space, after: cursor, limit: limit, collections: collections)
    }
}
