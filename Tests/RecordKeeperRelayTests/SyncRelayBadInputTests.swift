import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// Bad input is 400 with the reason and nothing written; a body over the limit is 413; the
/// server's failures become statuses a device can act on.
@Suite(.timeLimit(.minutes(10))) struct SyncRelayBadInputTests {
    private func post(_ relay: RelayHarness, _ body: String) async throws -> ClientResponse {
        try await request(
            "POST", relay.base + "/v1/push",
            headers: ["Authorization": "Bearer \(try RelayHarness.token(space: "alice"))"], body: Data(body.utf8))
    }

    @Test func `malformed push bodies are 400 with the reason and reach nothing`() async throws {
        try await withRelay { relay in
            let cases: [(String, String)] = [
                ("{\"operations\": [", "the body is not a push request: the body: "),
                ("[]", "the body is not a push request: the body is not an object"),
                ("{}", "the body is not a push request: operations is missing"),
                (#"{"operations":[{"id":"not-a-uuid","device":"d","sequence":1,"changes":[]}]}"#,
                 "the body is not a push request: operations[0].id: "),
                (#"{"operations":[{"id":"6F1C0000-0000-4000-8000-000000000001","device":"d","sequence":"one","changes":[]}]}"#,
                 "the body is not a push request: operations[0].sequence is not a whole number"),
                (#"{"operations":[{"id":"6F1C0000-0000-4000-8000-000000000001","device":"d","sequence":99999999999999999999,"changes":[]}]}"#,
                 "the body is not a push request: operations[0].sequence is 99999999999999999999, which is not a whole "
                    + "number from \(Int64.min) to \(Int64.max)"),
                (#"{"operations":[{"id":"6F1C0000-0000-4000-8000-000000000001","device":"d","sequence":1.5,"changes":[]}]}"#,
                 "the body is not a push request: operations[0].sequence is 1.5, which is not a whole number"),
            ]
            for (body, message) in cases {
                let response = try await post(relay, body)
                #expect(response.status == 400, "\(body)")
                #expect(response.errorMessage?.hasPrefix(message) == true, "\(response.errorMessage ?? "-")")
            }
            #expect(relay.server.calls.pushes == 0)
        }
    }

    @Test func `operations the server finds invalid are 400 with its reason and nothing applied`() async throws {
        let inner = InMemorySyncServer()
        try await withRelay(server: inner) { relay in
            let token = try RelayHarness.token(space: "alice")
            let good = SyncOperation.writing(["a": "1"], sequence: 1)
            let empty = SyncOperation(device: "phone", sequence: 2, changes: [])
            let response = try await relay.push([good, empty], token: token)
            #expect(response.status == 400)
            #expect(response.errorMessage == "operation \(empty.id.uuidString) has no changes")
        }
        #expect(try await inner.pull(space: "alice", after: .start, limit: 10).changes.isEmpty)
    }

    @Test func `operations with a sequence or a base out of range are 400 naming them, and nothing is applied`()
        async throws
    {
        let inner = InMemorySyncServer()
        try await withRelay(server: inner) { relay in
            let token = try RelayHarness.token(space: "alice")
            for sequence: Int64 in [0, -1, Int64.min, Int64.max] {
                let operation = SyncOperation.writing(["a": "1"], sequence: sequence)
                let response = try await relay.push([operation], token: token)
                #expect(response.status == 400)
                #expect(response.errorMessage == "the sequence of operation \(operation.id.uuidString) must be from 1 to "
                    + "\(Int64.max - 1), not \(sequence)")
            }
            for base: Int64 in [0, -5] {
                let operation = SyncOperation(
                    device: "phone", sequence: 1,
                    changes: [SyncChange(collection: "notes", key: "a", value: .tombstone, base: SyncServerVersion(base))])
                let response = try await relay.push([operation], token: token)
                #expect(response.status == 400)
                #expect(response.errorMessage == "the base of notes/a in operation \(operation.id.uuidString) must be a "
                    + "server version (from 1), not \(base)")
            }
        }
        // The server's own check refused them (every server runs it): nothing applied or recorded.
        #expect(try await inner.pull(space: "alice", after: .start, limit: 10).changes.isEmpty)
    }

    @Test func `bad pull parameters are 400 with the reason`() async throws {
        try await withRelay { relay in
            let token = try RelayHarness.token(space: "alice")
            let cases: [(String, String)] = [
                ("after=-1", "after must be a counter: a whole number, 0 or more"),
                ("after=x", "after must be a counter: a whole number, 0 or more"),
                ("limit=0", "limit must be a whole number from 1 to 100000"),
                ("limit=100001", "limit must be a whole number from 1 to 100000"),
                ("afterCollection=notes", "afterCollection and afterKey go together"),
                ("after=1&afterCollection=notes&afterKey=a%00b", "the value of afterKey contains a NUL character or is not UTF-8"),
                ("after=1&afterCollection=&afterKey=k", "the cursor collection is empty"),
                ("space=alice&space=bob", "the query parameter space is given twice"),
                ("limit=5&limit=6", "the query parameter limit is given twice"),
            ]
            for (query, message) in cases {
                let response = try await relay.pull(query, token: token)
                #expect(response.status == 400, "\(query)")
                #expect(response.errorMessage == message, "\(query)")
            }
        }
    }

    @Test func `a push over the body limit is 413 naming the limit`() async throws {
        try await withRelay({ $0.maxBodyBytes = 2000 }) { relay in
            let token = try RelayHarness.token(space: "alice")
            let big = SyncOperation.writing(["k": String(repeating: "x", count: 3000)], sequence: 1)
            let response = try await relay.push([big], token: token)
            #expect(response.status == 413)
            #expect(response.errorMessage == "the request body is larger than 2000 bytes")
            #expect(relay.server.calls.pushes == 0)
        }
    }

    @Test func `server failures become 503 with Retry-After, 500, and health says so`() async throws {
        let unreachable = FailingSyncServer(error: SyncError(.unreachable, "could not connect to db.internal:5432"))
        try await withRelay(server: unreachable, { $0.healthCheck = { throw SyncError(.unreachable, "no answer") } }) { relay in
            let token = try RelayHarness.token(space: "alice")
            let pushed = try await relay.push([.writing(["k": "v"], sequence: 1)], token: token)
            #expect(pushed.status == 503)
            #expect(pushed.header("Retry-After") == "1")
            #expect(!pushed.text.contains("db.internal"), "database details stay in the relay's log")
            #expect(try await relay.pull("", token: token).status == 503)
            let health = try await request("GET", relay.base + "/v1/health")
            #expect(health.status == 503)
            #expect(try health.decoded(RelayWire.Health.self).reason == "the database does not answer")
            #expect(relay.lines.lines.contains { $0.hasPrefix("event=server_unreachable operation=push") })
        }
        let failing = FailingSyncServer(error: SyncError(.serverFailure, "deadlock detected"))
        try await withRelay(server: failing) { relay in
            let response = try await relay.pull("", token: try RelayHarness.token(space: "alice"))
            #expect(response.status == 500)
            #expect(response.errorMessage == "the sync server failed the pull; its transaction was rolled back")
        }
    }

    @Test func `health requests arriving while a check runs share it`() async throws {
        let checks = Counter()
        let gate = Gate()
        try await withRelay({ configuration in
            configuration.healthCheck = {
                checks.increment()
                await gate.wait()
            }
        }) { relay in
            // Four: below URLSession's connections per host.
            let requests = (0..<4).map { _ in Task { try await request("GET", relay.base + "/v1/health") } }
            // Every request is being handled (the first runs the check, the others wait on it).
            do {
                try await waitUntil("four health requests being handled") { relay.http.statistics.handlers == 4 }
            } catch {
                await gate.open()  // the check ends, so the relay can stop
                throw error
            }
            await gate.open()
            for task in requests { #expect(try await task.value.status == 200) }
            #expect(checks.count == 1)
            // A later request runs a check of its own.
            #expect(try await request("GET", relay.base + "/v1/health").status == 200)
            #expect(checks.count == 2)
        }
    }
}
