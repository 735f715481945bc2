import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `recordkeeper sync --watch` started while its relay is down: it says it is offline and when
/// it tries again, touches no store meanwhile, and syncs once the relay answers, as continuous
/// sync does after a failed round. An in-process relay over an in-memory server: no
/// PostgreSQL needed.
@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(5)))
struct SyncWatchStartsOfflineTests {
    private static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// Starts the relay on `port`, which the watch already points at. Between the release of
    /// the held port and the relay's bind, another test's outgoing connection may take the
    /// port as its source port for a moment (the full suite hit it once): then it tries again,
    /// for up to 30 s, rather than fail on a port the test cannot change any more.
    private static func serve(_ tool: ToolBesideRelay, _ server: InMemorySyncServer, port: UInt16) async throws -> HTTPServer {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try tool.serve(server, port: port)
            } catch where "\(error)".contains("Address already in use") && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    @Test func `a watch started before its relay is up waits, says so, and syncs once the relay answers`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let tool = try ToolBesideRelay(space: "home", in: directory)
            let store = directory.appendingPathComponent("watching.sqlite")
            // Nothing listens on the port (held bound, not listening) until the relay takes it.
            var closed: ClosedPort? = try ClosedPort()
            let port = try #require(closed?.port)
            let watch = try ChildProcess(
                executable: tool.executable,
                arguments: [
                    "--store", store.path, "sync", "--watch", "--json", "--server", "http://127.0.0.1:\(port)",
                    "--token-file", tool.tokenFile.path, "--collections", "notes",
                ],
                in: directory,
                environment: tool.environment)
            try watch.start()
            defer { watch.kill() }

            let offline = try await watch.waitForLine(timeout: .seconds(60)) {
                Self.object($0)?["state"] as? String == "offline"
            }
            let error = try #require(Self.object(offline)?["error"] as? [String: Any])
            #expect(error["code"] as? String == "unreachable", "\(offline)")
            #expect(Self.object(offline)?["failures"] as? Int == 1)
            #expect(!FileManager.default.fileExists(atPath: store.path), "no store is made before the server answers")

            // The relay comes up on that port, holding one record of another device.
            let server = InMemorySyncServer()
            _ = try await server.push(
                space: "home", operations: [.writing(["hello": #""world""#], device: "laptop", sequence: 1)])
            closed = nil
            let relay = try await Self.serve(tool, server, port: UInt16(port))

            let synced = try await watch.waitForLine(timeout: .seconds(120)) {
                Self.object($0)?["state"] as? String == "upToDate"
            }
            #expect(((Self.object(synced)?["pulled"] as? [String: Any])?["changes"] as? Int) == 1, "\(synced)")
            watch.kill(SIGTERM)
            await watch.waitForExit(timeout: .seconds(60))
            await relay.shutdown(gracePeriod: .seconds(5))
            let stderr = try watch.errorOutput()
            #expect(watch.process.terminationStatus == 0, "\(stderr)")
            let lines = try watch.output().split(separator: "\n").map(String.init)
            #expect(lines.last == #"{"state":"stopped"}"#)
            #expect(lines.allSatisfy { Self.object($0) != nil }, "one JSON object per line")

            let copy = RecordStore(url: store)
            #expect(try await copy.read("notes")?["hello"] == Data(#""world""#.utf8))
        }
    }
}
