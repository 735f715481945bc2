import Foundation
import RecordKeeper
import RecordKeeperRelay
import RecordKeeperSync
import TestHelpers
import Testing

/// `GET /v1/pull?wait=S` on a relay over an in-memory server: held until a push commits,
/// `wait` read strictly and lowered to the relay's maximum, a pull held past the idle timeout
/// answered, held pulls answered at once when the relay shuts down, the health and metrics
/// saying so, and `HTTPSyncServer` sending `wait`.
@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(10))) struct SyncRelayLivePullTests {
    private func untilHeld(_ relay: SyncRelay, _ count: Int) async throws {
        try await waitUntil("the relay holds \(count) live pull(s)") { relay.livePullsHeld == count }
    }

    @Test func `a held pull is answered by the push that commits while it waits`() async throws {
        try await withRelay { harness in
            let token = try RelayHarness.token(space: "alice")
            let held = Task { try await harness.pull("after=0&wait=300", token: token) }
            try await untilHeld(harness.relay, 1)
            #expect(try await harness.push([.writing(["a": "1"], sequence: 1)], token: token).status == 200)
            let answer = try await held.value
            #expect(answer.status == 200)
            #expect(try SyncWireJSON.decodePage(answer.body).changes.map(\.key) == ["a"])
            let metrics = try await request("GET", harness.base + "/metrics").text
            #expect(metrics.contains("recordkeeper_relay_live_pulls_total{result=\"woken\"} 1"))
            #expect(metrics.contains("recordkeeper_relay_live_pulls_held 0"))
        }
    }

    @Test func `a held pull whose client went away is released by the next push, and the gauge says so`()
        async throws
    {
        try await withRelay { harness in
            let token = try RelayHarness.token(space: "alice")
            var connection: RawConnection? = try await RawConnection.open(port: harness.http.port)
            try await connection?.send(
                "GET /v1/pull?after=0&wait=300 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
            try await untilHeld(harness.relay, 1)
            connection = nil  // closed: a suspended connection is not watched, so it stays held
            #expect(harness.relay.livePullsHeld == 1)
            #expect(try await harness.push([.writing(["a": "1"], sequence: 1)], token: token).status == 200)
            try await untilHeld(harness.relay, 0)
            let metrics = try await request("GET", harness.base + "/metrics").text
            #expect(metrics.contains("recordkeeper_relay_live_pulls_held 0"), "\(metrics)")
            #expect(metrics.contains("recordkeeper_relay_live_pulls_total{result=\"woken\"} 1"), "\(metrics)")
        }
    }

    @Test(arguments: ["-1", "1.5", "", "abc", "+3", " 2", "0x10"])
    func `a wait that is not whole seconds is refused with the reason`(wait: String) async throws {
        try await withRelay { harness in
            let token = try RelayHarness.token(space: "alice")
            let query = "after=0&wait=" + (wait.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? wait)
            let answer = try await harness.pull(query, token: token)
            #expect(answer.status == 400)
            #expect(answer.errorMessage?.contains("wait must be whole seconds") == true, "\(answer.text)")
            #expect(harness.server.calls.pulls == 0)
        }
    }

    @Test func `a wait above the relay's maximum is lowered to it, and zero answers at once`() async throws {
        try await withRelay({ $0.maxPullWait = .seconds(1) }) { harness in
            let token = try RelayHarness.token(space: "alice")
            // Held at most 1 s (a wait of 10^30 s is lowered, not refused), then the empty page.
            let lowered = try await harness.pull("after=0&wait=1000000000000000000000000000000", token: token)
            #expect(lowered.status == 200)
            let page = try SyncWireJSON.decodePage(lowered.body)
            #expect(page.changes.isEmpty && page.cursor == SyncCursor(counter: 0))
            #expect(try await harness.pull("after=0&wait=0", token: token).status == 200)
            let metrics = try await request("GET", harness.base + "/metrics").text
            #expect(metrics.contains("recordkeeper_relay_live_pulls_total{result=\"timed_out\"} 1"))
        }
    }

    @Test func `a pull held longer than the idle timeout is answered`() async throws {
        var verifier = JWTVerifier.Configuration(key: try .hs256(secret: RelayHarness.secret))
        verifier.now = { Date(timeIntervalSince1970: RelayHarness.now) }
        var configuration = SyncRelay.Configuration(verifier: JWTVerifier(verifier))
        configuration.log = { _ in }
        let counting = CountingSyncServer(InMemorySyncServer())
        let relay = SyncRelay(server: counting, configuration: configuration)
        var http = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        http.log = { _ in }
        http.relaxedForTests()
        http.idleTimeout = .seconds(2)
        let server = try relay.serve(http)
        let token = try RelayHarness.token(space: "alice")
        // Held 5 s on a connection whose idle timeout is 2 s: the suspended connection is not
        // timed out (neither by libmicrohttpd nor by the receive deadlines). The request goes
        // out with the connect, on the connection's own thread (a cooperative pool starved by
        // the whole suite once kept five connections idle past 2 s between the two). A
        // connection the idle timeout still closed before the relay took its request never
        // reached the relay: that one is tried again. (With 1 s the answer was once cut at
        // load 20: a busy machine took that long from resume to write.)
        var answer: RawConnection.Response?
        for _ in 0..<10 where answer == nil {
            let pulls = counting.calls.pulls
            let connection = try await RawConnection.open(
                port: server.port,
                sending: "GET /v1/pull?after=0&wait=5 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
            do {
                answer = try await connection.readResponse()
            } catch where counting.calls.pulls == pulls {
                continue
            }
        }
        let response = try #require(answer)
        await server.shutdown(gracePeriod: .seconds(5))
        #expect(response.status == 200)
        #expect(try SyncWireJSON.decodePage(response.body).changes.isEmpty)
    }

    @Test func `shutting down answers held pulls at once with their empty page`() async throws {
        var verifier = JWTVerifier.Configuration(key: try .hs256(secret: RelayHarness.secret))
        verifier.now = { Date(timeIntervalSince1970: RelayHarness.now) }
        var configuration = SyncRelay.Configuration(verifier: JWTVerifier(verifier))
        configuration.log = { _ in }
        configuration.maxPullWait = .seconds(300)
        let relay = SyncRelay(server: InMemorySyncServer(), configuration: configuration)
        var http = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        http.log = { _ in }
        http.relaxedForTests()
        let server = try relay.serve(http)
        let token = try RelayHarness.token(space: "alice")
        let base = "http://127.0.0.1:\(server.port)"
        let held = (0..<3).map { _ in
            Task { try await request("GET", base + "/v1/pull?after=7&wait=300", headers: ["Authorization": "Bearer \(token)"]) }
        }
        try await untilHeld(relay, 3)
        // A grace period of 300 s: the shutdown returns at once only because the pulls are
        // answered at once (the test's time limit would end a wait for them).
        await server.shutdown(gracePeriod: .seconds(300))
        for pull in held {
            let answer = try await pull.value
            #expect(answer.status == 200)
            let page = try SyncWireJSON.decodePage(answer.body)
            #expect(page.changes.isEmpty && page.cursor == SyncCursor(counter: 7) && !page.hasMore)
        }
        #expect(relay.livePullsHeld == 0)
    }

    @Test func `the health says how long the relay holds a live pull`() async throws {
        try await withRelay({ $0.maxPullWait = .seconds(45) }) { harness in
            let client = HTTPSyncServer(url: URL(string: harness.base)!) { try RelayHarness.token(space: "alice") }
            let health = try await client.health()
            #expect(health.maxPullWait == 45)
        }
    }

    @Test func `HTTPSyncServer holds a live pull on the relay until a push commits`() async throws {
        try await withRelay { harness in
            let token = try RelayHarness.token(space: "alice")
            let client = HTTPSyncServer(url: URL(string: harness.base)!) { token }
            let held = Task {
                try await client.pull(space: "alice", after: .start, limit: 10, collections: nil, wait: .seconds(200))
            }
            try await untilHeld(harness.relay, 1)
            _ = try await client.push(space: "alice", operations: [.writing(["a": "1"], sequence: 1)])
            #expect(try await held.value.changes.map(\.key) == ["a"])
        }
    }

    @Test func `HTTPSyncServer polls a relay that holds no pull instead of answering an empty page at once`() async throws {
        try await withRelay({ $0.maxPullWait = .zero }) { harness in
            let token = try RelayHarness.token(space: "alice")
            let client = HTTPSyncServer(url: URL(string: harness.base)!) { token }
            let held = Task {
                try await client.pull(space: "alice", after: .start, limit: 10, collections: ["notes"], wait: .seconds(200))
            }
            // The relay answered the first pull (empty) at once; the push comes after it.
            try await waitUntil("the first pull answered") { harness.server.calls.pulls >= 1 }
            _ = try await client.push(space: "alice", operations: [.writing(["a": "1"], in: "notes", sequence: 1)])
            #expect(try await held.value.changes.map(\.key) == ["a"])
        }
    }

    @Test func `pages read ahead are forgotten after a push, never answered stale`() async throws {
        try await withRelay { harness in
            let token = try RelayHarness.token(space: "alice")
            let client = HTTPSyncServer(url: URL(string: harness.base)!) { token }
            let five = ["a": "1", "b": "1", "c": "1", "d": "1", "e": "1"]
            _ = try await client.push(space: "alice", operations: [.writing(five, sequence: 1)])
            // Pages of two; the relay's answer carries the next ones, kept for the next pulls.
            let first = try await client.pull(space: "alice", after: .start, limit: 2, collections: nil)
            #expect(first.changes.map(\.key) == ["a", "b"] && first.hasMore)
            let rewrite = SyncOperation(
                device: "phone", sequence: 2,
                changes: [SyncChange(collection: "notes", key: "d", value: .payload(Data("2".utf8)), base: SyncServerVersion(1))])
            #expect(try await client.push(space: "alice", operations: [rewrite]).map(\.result.appliedVersion) == [SyncServerVersion(2)])
            // From the server as it is now: c and e (version 1), then d at 2; never d at 1.
            let second = try await client.pull(space: "alice", after: first.cursor, limit: 2, collections: nil)
            #expect(second.changes.map(\.key) == ["c", "e"])
            let third = try await client.pull(space: "alice", after: second.cursor, limit: 2, collections: nil)
            #expect(third.changes.map(\.key) == ["d"])
            #expect(third.changes.map(\.version) == [SyncServerVersion(2)])
        }
    }

    @Test func `HTTPSyncServer sends wait in whole seconds, rounded up`() async throws {
        let seen = Protected([String?]())
        let empty = try SyncWireJSON.encode(SyncPage(changes: [], cursor: .start, hasMore: false))
        let route = HTTPRoute(.get, RelayWire.pullPath) { request in
            seen.withLock { $0.append(request.query["wait"]) }
            return HTTPResponse(status: 200, json: empty)
        }
        try await withServer(routes: [route]) { server in
            let client = HTTPSyncServer(url: URL(string: "http://127.0.0.1:\(server.port)")!) { "token" }
            for wait in [Duration.milliseconds(1500), .seconds(30), .zero] {
                _ = try await client.pull(space: "alice", after: .start, limit: 10, collections: nil, wait: wait)
            }
        }
        #expect(seen.withLock { $0 } == ["2", "30", nil])
    }
}
