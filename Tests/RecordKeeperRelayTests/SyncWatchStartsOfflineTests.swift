import Foundation
import RecordKeeper
import RecordKeeperRelay
import RecordKeeperTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `recordkeeper sync --watch` started while its relay is down: it says it is offline and when
/// it tries again, touches no store meanwhile, and syncs once the relay answers, as continuous
/// sync does after a failed round. An in-process relay over an in-memory server: no
/// PostgreSQL needed.
@Suite(.timeLimit(.minutes(5)))
struct SyncWatchStartsOfflineTests {
    private static let secret = Array("the watch test's relay secret, 32+ bytes".utf8)

    private static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    @Test func `a watch started before its relay is up waits, says so, and syncs once the relay answers`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let executable = try #require(BuildProducts.executable(named: "recordkeeper", override: "RECORDKEEPER_BINARY"))
            let token = try JWTSigner(key: .hs256(secret: Self.secret))
                .sign(RelayAccess(space: "home").claims(expiresAt: Date().timeIntervalSince1970 + 3600))
            let tokenFile = directory.appendingPathComponent("token")
            try Data((token + "\n").utf8).write(to: tokenFile)
            let store = directory.appendingPathComponent("watching.sqlite")
            // Nothing listens on the port (held bound, not listening) until the relay takes it.
            var closed: ClosedPort? = try ClosedPort()
            let port = try #require(closed?.port)
            let watch = try ChildProcess(
                executable: executable,
                arguments: [
                    "--store", store.path, "sync", "--watch", "--json", "--server", "http://127.0.0.1:\(port)",
                    "--token-file", tokenFile.path, "--collections", "notes",
                ],
                in: directory,
                environment: ["RECORDKEEPER_SYNC_SERVER": nil, "RECORDKEEPER_SYNC_TOKEN": nil, "RECORDKEEPER_STORE": nil])
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
                space: "home",
                operations: [
                    SyncOperation(
                        id: UUID(), device: "laptop", sequence: 1,
                        changes: [SyncChange(collection: "notes", key: "hello", value: .payload(Data(#""world""#.utf8)), base: nil)])
                ])
            var verifier = JWTVerifier.Configuration(key: try .hs256(secret: Self.secret))
            verifier.now = { Date() }
            var configuration = SyncRelay.Configuration(verifier: JWTVerifier(verifier))
            configuration.log = { _ in }
            var http = HTTPServer.Configuration(host: "127.0.0.1", port: UInt16(port))
            http.log = { _ in }
            http.relaxedForTests()
            closed = nil
            let relay = try SyncRelay(server: server, configuration: configuration).serve(http)

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
