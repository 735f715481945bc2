import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import TestHelpers
import Testing

@testable import RecordKeeperRelayTool

/// The `recordkeeper-relay` command line, run as a process: `token`, `migrate`, `serve`.
@Suite(.timeLimit(.minutes(10))) struct RelayToolTests {
    private func secretFile(in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("secret")
        try Data("a relay secret for the tool tests, 32+ bytes\n".utf8).write(to: url)
        return url
    }

    @Test func `token prints a token the relay accepts, with the claims asked for`() async throws {
        try await withTemporaryDirectory { directory in
            let secret = try secretFile(in: directory)
            let result = try await RelayProcess.run([
                "token", "--space", "alice", "--secret-file", secret.path, "--ttl", "2h", "--read-only",
                "--collections", "notes, lists", "--audience", "relay",
            ])
            #expect(result.status == 0, "\(result.error)")
            let token = result.output.trimmingCharacters(in: .newlines)
            // The trailing newline of the file is not part of the secret.
            var configuration = JWTVerifier.Configuration(
                key: try .hs256(secret: Array("a relay secret for the tool tests, 32+ bytes".utf8)))
            configuration.audience = "relay"
            let claims = try JWTVerifier(configuration).verify(token)
            #expect(try RelayAccess(claims: claims) == RelayAccess(space: "alice", readOnly: true, collections: ["notes", "lists"]))
            let issued = try #require(claims.issuedAt)
            #expect(claims.expiresAt.timeIntervalSince(issued) == 7200)
        }
    }

    @Test func `wrong command lines and unusable files exit with their codes and a reason`() async throws {
        try await withTemporaryDirectory { directory in
            let short = directory.appendingPathComponent("short")
            try Data("short".utf8).write(to: short)
            let secret = try secretFile(in: directory)
            let cases: [([String], Int32, String)] = [
                (["token", "--secret-file", short.path], 64, "token needs --space"),
                (["token", "--space", "a", "--secret-file", directory.appendingPathComponent("none").path], 66, "does not exist"),
                (["token", "--space", "a", "--secret-file", short.path], 78, "needs at least 32 bytes; this one has 5"),
                (["token", "--space", "a", "--secret-file", short.path, "--ttl", "soon"], 64, "--ttl takes seconds"),
                (["token", "--space", "a", "--secret-file", secret.path, "--collections", ""], 64, "holds an empty name"),
                (["token", "--space", "a", "--secret-file", secret.path, "--collections", "a,,b"], 64, "holds an empty name"),
                (["token", "--space", "a", "--secret-file", secret.path, "--collections", "a, a"], 64, "names a collection twice"),
                (["serve", "--jwt-secret-file", short.path], 64, "serve needs --database"),
                (["serve", "--database", "host=x", "--listen", "nowhere"], 64, "--listen takes HOST:PORT"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--tls-cert", "c.pem"], 64, "--tls-cert and --tls-key go together"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--live-wake", "sometimes"], 64, "--live-wake takes listen, poll"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--max-pull-wait", "301"], 64, "--max-pull-wait takes at most 300"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--jwt-leeway", "2d"], 64,
                 "--jwt-leeway takes at most 3600 seconds (an hour), not 172800"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--max-pages-per-answer", "17"], 64, "--max-pages-per-answer"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--pulls-ahead", "-1"], 64, "--pulls-ahead"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--send-timeout", "0"], 64, "--send-timeout"),
                (["serve", "--database", "host=x", "--jwt-secret-file", secret.path, "--body-timeout", "soon"], 64, "--body-timeout"),
                (["launch"], 64, "unknown command 'launch'"),
                (["token", "--space", "alice", "--secret-file", secret.path, "--space", "bob"], 64,
                 "option --space is given twice; give it once"),
            ]
            for (arguments, status, message) in cases {
                let result = try await RelayProcess.run(arguments)
                #expect(result.status == status, "\(arguments): \(result.error)")
                #expect(result.error.contains(message), "\(arguments): \(result.error)")
                #expect(result.output.isEmpty)
            }
        }
    }

    @Test func `serve warns at start when tokens name no audience`() async throws {
        try await withTemporaryDirectory { directory in
            let secret = try secretFile(in: directory)
            // A database nobody answers at: serve stops after its start-up checks.
            let base = ["serve", "--database", "host=127.0.0.1 port=1 connect_timeout=2", "--jwt-secret-file", secret.path]
            let without = try await RelayProcess.run(base)
            #expect(without.status != 0)
            #expect(without.error.contains("warning: no --jwt-audience"), "\(without.error)")
            let with = try await RelayProcess.run(base + ["--jwt-audience", "relay"])
            #expect(with.status != 0)
            #expect(!with.error.contains("--jwt-audience"), "\(with.error)")
        }
    }

    @Test func `listen addresses take IPv4, bracketed IPv6 and a bare port`() throws {
        #expect(try ServeCommand.listenAddress("127.0.0.1:8080") == ("127.0.0.1", 8080))
        #expect(try ServeCommand.listenAddress("[::1]:443") == ("::1", 443))
        #expect(try ServeCommand.listenAddress(":9000") == ("0.0.0.0", 9000))
        #expect(throws: (any Error).self) { try ServeCommand.listenAddress("localhost") }
        #expect(throws: (any Error).self) { try ServeCommand.listenAddress("127.0.0.1:70000") }
    }

    @Test(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
    func `serve relays pushes and pulls to PostgreSQL and stops on SIGTERM`() async throws {
        let conninfo = try TestPostgres.requireConninfo()
        try await withTemporaryDirectory { directory in
            let secret = try secretFile(in: directory)
            let migrated = try await RelayProcess.run(["migrate", "--database", conninfo, "--step-timeout", "600"])
            #expect(migrated.status == 0, "\(migrated.error)")
            #expect(migrated.output.hasPrefix("the sync schema is at version"))
            let refused = try await RelayProcess.run(["migrate", "--database", conninfo, "--step-timeout", "0"])
            #expect(refused.status == 64, "\(refused.error)")
            #expect(refused.error.contains("--step-timeout"), "\(refused.error)")
            let relay = try await RelayProcess.serve([
                "--database", conninfo, "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path, "--pool", "2",
                "--statement-timeout", "30",
            ], in: directory)
            let space = "relay-tool-\(UUID().uuidString)"
            let token = try await RelayProcess.run(["token", "--space", space, "--secret-file", secret.path]).output
                .trimmingCharacters(in: .newlines)
            let headers = ["Authorization": "Bearer \(token)"]
            let operation = SyncOperation.writing(["today": "milk"], sequence: 1)
            let pushed = try await request(
                "POST", relay.url + "/v1/push", headers: headers,
                body: try JSONEncoder().encode(RelayWire.PushRequest(operations: [operation])))
            #expect(pushed.status == 200)
            #expect(try pushed.decoded(RelayWire.PushResponse.self).outcomes.first?.result == .applied(SyncServerVersion(1)))
            let page = try await request("GET", relay.url + "/v1/pull?after=0", headers: headers).decoded(SyncPage.self)
            #expect(page.changes.map(\.value) == [.payload(Data("milk".utf8))])
            let health = try await request("GET", relay.url + "/v1/health")
            #expect(health.status == 200)
            let stopped = try await relay.terminate()
            #expect(stopped.status == 0)
            #expect(stopped.log.contains("route=/v1/push status=200"))
            #expect(stopped.log.contains("space=\(space)"))
            #expect(!stopped.log.contains(token))
            #expect(stopped.log.hasSuffix("recordkeeper-relay: stopped\n"))
        }
    }

    @Test(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
    func `migrate exits 78 for settings to correct and 69 for a server that does not answer`() async throws {
        let conninfo = try TestPostgres.requireConninfo()
        let cases: [(String, Int32, String)] = [
            ("bogus_option=1", 78, "invalid connection option"),
            (conninfo + " dbname=recordkeeper_no_such_database", 78, "does not exist"),
            ("host=127.0.0.1 port=1 connect_timeout=5", 69, "cannot connect"),
        ]
        for (database, status, words) in cases {
            let result = try await RelayProcess.run(["migrate", "--database", database])
            #expect(result.status == status, "\(database): \(result.error)")
            #expect(result.error.contains(words), "\(database): \(result.error)")
        }
    }

    @Test(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
    func `compact forgets a space's old outcomes and tombstones and prints what it did`() async throws {
        let conninfo = try TestPostgres.requireConninfo()
        let server = try await PostgresSyncServer.connect(conninfo)
        let space = "relay-compact-\(UUID().uuidString)"
        let write = SyncOperation(device: "phone", sequence: 1, changes: [
            SyncChange(collection: "notes", key: "a", value: .payload(Data("A".utf8)), base: nil)])
        let erase = SyncOperation(device: "phone", sequence: 2, changes: [
            SyncChange(collection: "notes", key: "a", value: .tombstone, base: SyncServerVersion(1))])
        _ = try await server.push(space: space, operations: [write, erase])
        // Received forty days ago, as the server's clock sees it.
        _ = try await server.connection.transaction { connection in
            try connection.execute(
                "UPDATE recordkeeper_sync_operations SET received_at = received_at - interval '40 days' WHERE space = $1",
                [.text(space)])
        }
        let result = try await RelayProcess.run(["compact", "--database", conninfo, "--space", space, "--older-than", "30d"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output == "space=\(space) horizon=2 tombstones=1 operations=2\n")
        let again = try await server.push(space: space, operations: [erase])
        #expect(again.first?.result == .compacted([SyncConflict(collection: "notes", key: "a", base: SyncServerVersion(1), server: nil)]))

        let short = try await RelayProcess.run(["compact", "--database", conninfo, "--older-than", "10m"])
        #expect(short.status == 64 && short.error.contains("--older-than takes seconds"), "\(short.error)")
        let nothing = try await RelayProcess.run(["compact", "--older-than", "1d"])
        #expect(nothing.status == 64 && nothing.error.contains("compact needs --database"), "\(nothing.error)")
        // A misspelled space is not a success with nothing done.
        let misspelled = try await RelayProcess.run(["compact", "--database", conninfo, "--space", space + "x"])
        #expect(misspelled.status == 66, "\(misspelled.error)")
        #expect(misspelled.error.contains("no push ever reached space '\(space)x' here"), "\(misspelled.error)")
        #expect(misspelled.output.isEmpty)
    }
}
