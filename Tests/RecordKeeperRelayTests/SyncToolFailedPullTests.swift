import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// `recordkeeper sync` whose push records a conflict and whose pull then fails: the command
/// fails (exit 69, unreachable), and still names the conflict its push kept in the store
/// (`SyncError.partialReport`). An in-process relay over an in-memory server: no PostgreSQL.
@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(5)))
struct SyncToolFailedPullTests {
    @Test func `a sync whose pull fails after its push names the conflict the push recorded`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = try ToolBesideRelay(space: "home", in: directory)
            let executable = tool.executable
            let store = directory.appendingPathComponent("phone.sqlite")

            // Another device wrote "today" first: the phone's new "today" conflicts with it.
            let inner = InMemorySyncServer()
            _ = try await inner.push(space: "home", operations: [.writing(["today": "theirs"], device: "laptop", sequence: 1)])
            let relay = try tool.serve(PullsFailAfterTokenCheck(inner))
            let environment = tool.environment
            let put = try await ChildProcess.run(
                executable, ["--store", store.path, "put", "notes", "today", #""mine""#], in: directory,
                environment: environment)
            #expect(put.status == 0, "\(put.stderr)")
            let sync = try await ChildProcess.run(
                executable,
                [
                    "--store", store.path, "sync", "--server", "http://127.0.0.1:\(relay.port)", "--token-file",
                    tool.tokenFile.path, "--collections", "notes",
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
