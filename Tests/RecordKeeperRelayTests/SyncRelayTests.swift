import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// The relay's protocol over real loopback HTTP, in front of an in-memory sync server: pushes
/// apply, pulls page, and the answers are what the server itself answers.
@Suite(.timeLimit(.minutes(10))) struct SyncRelayTests {
    @Test func `a push through the relay applies and a pull returns what the server holds`() async throws {
        let inner = InMemorySyncServer()
        try await withRelay(server: inner) { relay in
            let token = try RelayHarness.token(space: "alice")
            let first = SyncOperation.writing(["today": "milk", "tomorrow": "eggs"], sequence: 1)
            let second = SyncOperation.writing(["today": "bread"], in: "lists", sequence: 2)
            let pushed = try await relay.push([first, second], token: token)
            #expect(pushed.status == 200)
            let outcomes = try pushed.decoded(RelayWire.PushResponse.self).outcomes
            #expect(outcomes.map(\.operationID) == [first.id, second.id])
            #expect(outcomes.map(\.result) == [.applied(SyncServerVersion(1)), .applied(SyncServerVersion(2))])

            let pulled = try await relay.pull("after=0", token: token)
            #expect(pulled.status == 200)
            let page = try pulled.decoded(SyncPage.self)
            #expect(page == (try await inner.pull(space: "alice", after: .start, limit: 1000)))
            #expect(page.changes.map(\.key) == ["today", "tomorrow", "today"])
            #expect(page.cursor == SyncCursor(counter: 2))
            #expect(!page.hasMore)
        }
    }

    @Test func `a push sent again is answered with the stored outcomes and applies nothing twice`() async throws {
        try await withRelay { relay in
            let token = try RelayHarness.token(space: "alice")
            let operation = SyncOperation.writing(["k": "v"], sequence: 1)
            _ = try await relay.push([operation], token: token)
            let again = try await relay.push([operation], token: token).decoded(RelayWire.PushResponse.self)
            #expect(again.outcomes.first?.isRedelivery == true)
            #expect(again.outcomes.first?.result == .applied(SyncServerVersion(1)))
            let page = try await relay.pull("", token: token).decoded(SyncPage.self)
            #expect(page.cursor == SyncCursor(counter: 1))
        }
    }

    @Test func `pages cut short continue from afterCollection and afterKey`() async throws {
        try await withRelay { relay in
            let token = try RelayHarness.token(space: "alice")
            let values = Dictionary(uniqueKeysWithValues: (0..<5).map { ("key \($0)/é&=", "v\($0)") })
            _ = try await relay.push([.writing(values, sequence: 1)], token: token)
            var keys: [String] = []
            var query = "after=0&limit=2"
            var pages = 0
            while true {
                let page = try await relay.pull(query, token: token).decoded(SyncPage.self)
                pages += 1
                keys += page.changes.map(\.key)
                guard page.hasMore, let position = page.cursor.position else { break }
                let allowed = CharacterSet.alphanumerics
                query = "after=\(page.cursor.counter)&limit=2"
                    + "&afterCollection=" + position.collection.addingPercentEncoding(withAllowedCharacters: allowed)!
                    + "&afterKey=" + position.key.addingPercentEncoding(withAllowedCharacters: allowed)!
            }
            #expect(keys == values.keys.sorted())
            #expect(pages == 3)
        }
    }

    @Test func `a limit above the relay's page size is lowered to it`() async throws {
        try await withRelay({ $0.maxPullLimit = 3 }) { relay in
            let token = try RelayHarness.token(space: "alice")
            let values = Dictionary(uniqueKeysWithValues: (0..<5).map { ("k\($0)", "v") })
            _ = try await relay.push([.writing(values, sequence: 1)], token: token)
            let page = try await relay.pull("limit=100", token: token).decoded(SyncPage.self)
            #expect(page.changes.count == 3)
            #expect(page.hasMore)
        }
    }

    @Test func `health reports the limits a device needs, and metrics count what happened`() async throws {
        try await withRelay({ $0.maxBodyBytes = 123_456 }) { relay in
            let health = try await request("GET", relay.base + "/v1/health")
            #expect(health.status == 200)
            #expect(
                try health.decoded(RelayWire.Health.self)
                    == RelayWire.Health(
                        status: "ok", protocolVersion: 1, maxBodyBytes: 123_456, maxPullLimit: 10_000, itemVersions: true,
                        maxPullWait: 60))
            let token = try RelayHarness.token(space: "alice")
            let operation = SyncOperation.writing(["k": "v"], sequence: 1)
            _ = try await relay.push([operation], token: token)
            _ = try await relay.push([operation], token: token)
            _ = try await relay.pull("", token: token)
            _ = try await relay.pull("", token: "not-a-token")
            // The metrics request itself is counted when it completes: read after the others.
            let metrics = try await request("GET", relay.base + "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = metrics.text
            for line in [
                #"recordkeeper_relay_requests_total{route="/v1/push",status="200"} 2"#,
                #"recordkeeper_relay_requests_total{route="/v1/pull",status="200"} 1"#,
                #"recordkeeper_relay_requests_total{route="/v1/pull",status="401"} 1"#,
                #"recordkeeper_relay_requests_total{route="/v1/health",status="200"} 1"#,
                #"recordkeeper_relay_request_duration_seconds_count{route="/v1/push"} 2"#,
                #"recordkeeper_relay_request_duration_seconds_bucket{route="/v1/push",le="+Inf"} 2"#,
                #"recordkeeper_relay_operations_total{result="applied"} 1"#,
                #"recordkeeper_relay_operations_total{result="redelivered"} 1"#,
                "recordkeeper_relay_pull_pages_total 1",
                "recordkeeper_relay_pulled_changes_total 1",
                #"recordkeeper_relay_refused_total{reason="malformed"} 1"#,
                "recordkeeper_relay_handlers_running 1",
            ] {
                #expect(text.contains(line + "\n"), "missing: \(line)")
            }
        }
    }

    @Test func `each request logs one line with its space, never its token or payload`() async throws {
        let token = try RelayHarness.token(space: "alice")
        let lines = try await withRelay { relay in
            _ = try await relay.push([.writing(["secret-key": "secret-payload"], sequence: 1)], token: token)
            _ = try await relay.pull("after=0", token: token)
            return relay.lines
        }
        let logged = lines.lines
        #expect(logged.count == 2)
        #expect(logged[0].hasPrefix("method=POST route=/v1/push status=200 duration_ms="))
        #expect(logged[0].hasSuffix("space=alice operations=1"))
        #expect(logged[1].contains("route=/v1/pull status=200"))
        #expect(logged[1].hasSuffix("space=alice changes=1"))
        let all = logged.joined(separator: "\n")
        for secret in ["secret-key", "secret-payload", token, String(token.split(separator: ".")[2])] {
            #expect(!all.contains(secret))
        }
    }
}
