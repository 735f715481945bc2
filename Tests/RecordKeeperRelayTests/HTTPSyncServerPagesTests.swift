import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// Pull answers holding several pages (`pages=N`, `RecordKeeper-Pages`): a device catching up
/// makes fewer requests, and gets exactly the pages sequential pulls would give.
@Suite(.timeLimit(.minutes(10)))
struct HTTPSyncServerPagesTests {
    private func pullRequests(_ relay: RelayHarness) -> [String] {
        relay.lines.lines.filter { $0.contains("route=/v1/pull ") }
    }

    @Test func `an answer of several pages gives the pages of sequential pulls in fewer requests`() async throws {
        let inner = InMemorySyncServer()
        try await fillAlice(inner)
        let direct = try await sequentialPages(inner, limit: 4)
        #expect(direct.count > 4)
        try await withRelay(server: inner, { $0.maxPagesPerAnswer = 3 }) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let pulled = try await sequentialPages(client, limit: 4)
            #expect(pulled == direct)
            // The in-memory server reads several pages at once, as PostgreSQL does: one read
            // of the server per answer.
            #expect(relay.server.calls.pulls == (direct.count + 2) / 3, "each answer read once from the server")
            let requests = pullRequests(relay)
            #expect(requests.count == (direct.count + 2) / 3, "\(requests)")
            #expect(requests.first?.hasSuffix("pages=3") == true, "\(requests)")
        }
    }

    @Test func `a page kept from an answer goes only to a pull of exactly its request`() async throws {
        let inner = InMemorySyncServer()
        try await fillAlice(inner)
        try await withRelay(server: inner) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let first = try await client.pull(space: "alice", after: .start, limit: 4)
            #expect(first.hasMore)
            // Something changes after the answer: a pull of another limit asks the relay anew.
            _ = try await inner.push(space: "alice", operations: [.writing(["late": "x"], sequence: 6)])
            let other = try await client.pull(space: "alice", after: first.cursor, limit: 3)
            let fresh = try await inner.pull(space: "alice", after: first.cursor, limit: 3)
            #expect(other == fresh)
            // Another space: the relay's 403, never a page kept for alice.
            let bob = await #expect(throws: SyncError.self) {
                _ = try await client.pull(space: "bob", after: first.cursor, limit: 4)
            }
            #expect(bob?.code == .forbidden)
            let second = try await client.pull(space: "alice", after: first.cursor, limit: 4)
            let expected = try await inner.pull(space: "alice", after: first.cursor, limit: 4)
            #expect(second == expected)
        }
    }

    @Test func `a failure after some pages ends the answer there, and the rest is pulled again`() async throws {
        let watched = WatchedPullServer(InMemorySyncServer())
        try await fillAlice(watched)
        let direct = try await sequentialPages(watched.inner, limit: 4)
        try await withRelay(server: watched) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            watched.failOnce(after: direct[1].cursor)
            let pulled = try await sequentialPages(client, limit: 4)
            #expect(pulled == direct)
            #expect(pullRequests(relay).count == 2, "the first answer ended before the failing page")
            #expect(relay.lines.lines.contains { $0.contains("page 3 of an answer") }, "\(relay.lines.lines)")
        }
    }

    @Test func `keys and payloads with line breaks travel in an answer of several pages`() async throws {
        let inner = InMemorySyncServer()
        var values: [String: String] = [:]
        for n in 0..<10 { values["line\n\(n)\r\u{2028}"] = "payload\n\(n)" }
        _ = try await inner.push(space: "alice", operations: [.writing(values, sequence: 1)])
        let direct = try await sequentialPages(inner, limit: 3)
        try await withRelay(server: inner) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let pulled = try await sequentialPages(client, limit: 3)
            #expect(pulled == direct)
            #expect(pullRequests(relay).count == 1)
        }
    }
}
