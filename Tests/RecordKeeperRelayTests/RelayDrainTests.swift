import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import TestHelpers
import Testing

/// `recordkeeper-relay serve` on SIGTERM, as a process against PostgreSQL: a push in flight
/// finishes and is applied, a request arriving meanwhile gets 503, then the relay exits 0.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct RelayDrainTests {
    @Test func `on SIGTERM a push in flight finishes, new requests get 503, and the relay exits 0`() async throws {
        try await withTemporaryDirectory { directory in
            try await TestPostgres.withPrivateSchema(prefix: "relay_drain") { conninfo, _ in
                let secret = directory.appendingPathComponent("secret")
                try Data("a relay secret for the drain test, 32+ bytes".utf8).write(to: secret)
                #expect(try await RelayProcess.run(["migrate", "--database", conninfo]).status == 0)
                let space = "drain-\(UUID().uuidString)"

                // A push of the test's own holds the space's counter lock until the gate opens,
                // so the relay's push for that space waits inside PostgreSQL.
                let gate = BlockingGate()
                let holder = try await PostgresSyncServer(
                    connections: [try await PostgresConnection(conninfo: conninfo)],
                    hooks: .init(beforeCommit: { _ in gate.arriveAndWait() }),
                    // The gate stays closed while the test starts and kills processes: a
                    // deadline that passed meanwhile would fail the held push for the load.
                    timeout: .seconds(300))
                let holderPID = await holder.connection.backendProcessID
                let held = Task {
                    try await holder.push(
                        space: space, operations: [.writing(["first": "1"], device: "holder", sequence: 1)])
                }
                await gate.arrival()

                let relay = try await RelayProcess.serve(
                    ["--database", conninfo, "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path, "--pool", "2"],
                    in: directory)
                let token = try await RelayProcess.run(["token", "--space", space, "--secret-file", secret.path]).output
                    .trimmingCharacters(in: .newlines)
                let headers = ["Authorization": "Bearer \(token)"]
                let body = try RecordJSONEncoder().encode(
                    RelayWire.PushRequest(operations: [.writing(["second": "2"], device: "device", sequence: 1)]))
                let inFlight = Task { try await request("POST", relay.url + "/v1/push", headers: headers, body: body) }
                try await waitUntilBlocked(by: holderPID)

                try await relay.beginTermination()
                let refused = try await request("GET", relay.url + "/v1/pull?after=0", headers: headers)
                #expect(refused.status == 503)
                #expect(refused.headers.first { $0.key.lowercased() == "retry-after" }?.value == "1")
                #expect(relay.child.process.isRunning, "the relay waits for its push in flight")

                gate.open()
                #expect(try await held.value.first?.result == .applied(SyncServerVersion(1)))
                let pushed = try await inFlight.value
                #expect(pushed.status == 200)
                #expect(try pushed.decoded(RelayWire.PushResponse.self).outcomes.first?.result == .applied(SyncServerVersion(2)))
                let stopped = try await relay.exit()
                #expect(stopped.status == 0)
                #expect(stopped.log.hasSuffix("recordkeeper-relay: stopped\n"))
                let page = try await holder.pull(space: space, after: SyncCursor(counter: 0), limit: 10)
                #expect(page.changes.map(\.key) == ["first", "second"])
            }
        }
    }
}
