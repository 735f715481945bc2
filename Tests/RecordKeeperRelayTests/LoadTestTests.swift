import Foundation
import TestHelpers
import Testing

/// `recordkeeper-loadtest --quick` over both test PostgreSQL servers (a shard map over a private
/// schema of each): two relay processes, a few devices holding live pulls, one relay restart,
/// and the load test's own checks (convergence, exactly once, every collision a reported
/// conflict), which make it exit non-zero on any violation.
///
/// One test at a time, each relay with one query connection per database: the test servers are
/// shared with the whole suite (their connection limit is the suite's).
@Suite(.enabled(if: TestPostgres.twoServersEnabled, TestPostgres.twoServersDisabledReason), .serialized, .timeLimit(.minutes(5)))
struct LoadTestTests {
    @Test func `the quick load test over two relays with a restart passes its checks`() async throws {
        let (status, text) = try await runLoadTest(["--seed", "7"])
        #expect(status == 0, "\(text)")
        #expect(text.contains("collision one applied + one reported conflict: OK"), "\(text)")
        #expect(text.contains("restarted relay A"), "\(text)")
    }

    @Test func `a device that differs from the server fails the load test`() async throws {
        let (status, text) = try await runLoadTest(["--seed", "8", "--no-restarts", "--fault", "unsynced-edit"])
        #expect(status == 1, "\(text)")
        #expect(text.contains("differs from the server in 1 records"), "\(text)")
        #expect(text.contains("made 0 local transactions") || text.contains("local transactions but sent"), "\(text)")
    }

    /// Runs `recordkeeper-loadtest --quick` over a private schema on each test PostgreSQL server
    /// with `arguments`; its exit status and output.
    private func runLoadTest(_ arguments: [String]) async throws -> (Int32, String) {
        guard let loadTest = BuildProducts.executable(named: "recordkeeper-loadtest", override: "RECORDKEEPER_LOADTEST_BINARY") else {
            throw RelayProcess.Failure(description: "recordkeeper-loadtest is not built (swift build --build-tests)")
        }
        let relay = try RelayProcess.executable()
        let second = try TestPostgres.requireSecondConninfo()
        return try await TestPostgres.withPrivateSchema(prefix: "loadtest_a") { first, _ in
            try await TestPostgres.withPrivateSchema(on: second, prefix: "loadtest_b") { second, _ in
                try await run(loadTest, ["--quick", "--database", first, "--database", second, "--pool", "1", "--relay", relay.path] + arguments)
            }
        }
    }

    /// Runs `executable` with `arguments` to its end (``ChildProcess/run(_:_:in:environment:input:)``,
    /// its output files in a fresh directory): exit status, and output followed by errors.
    private func run(_ executable: URL, _ arguments: [String]) async throws -> (Int32, String) {
        try await withTemporaryDirectory { directory in
            let result = try await ChildProcess.run(executable, arguments, in: directory)
            return (result.status, result.output + result.stderr)
        }
    }
}
