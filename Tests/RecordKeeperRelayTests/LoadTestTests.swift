import Foundation
import RecordKeeperTestSupport
import Testing

/// `recordkeeper-loadtest --quick` over the test PostgreSQL: two relay processes, a few devices
/// holding live pulls, one relay restart, and the load test's own checks (convergence, exactly
/// once, every collision a reported conflict), which make it exit non-zero on any violation.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(5)))
struct LoadTestTests {
    @Test func `the quick load test over two relays with a restart passes its checks`() async throws {
        guard let loadTest = BuildProducts.executable(named: "recordkeeper-loadtest", override: "RECORDKEEPER_LOADTEST_BINARY") else {
            Issue.record("recordkeeper-loadtest is not built (swift build --build-tests)")
            return
        }
        let relay = try RelayProcess.executable()
        try await TestPostgres.withPrivateSchema(prefix: "loadtest") { conninfo, _ in
            let process = SpawnedProcess()
            process.executableURL = loadTest
            process.arguments = ["--quick", "--database", conninfo, "--relay", relay.path, "--seed", "7"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let (status, text) = await onOwnThread {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return (process.terminationStatus, String(decoding: data, as: UTF8.self))
            }
            #expect(status == 0, "\(text)")
            #expect(text.contains("collision one applied + one reported conflict: OK"), "\(text)")
            #expect(text.contains("restarted relay A"), "\(text)")
        }
    }
}
