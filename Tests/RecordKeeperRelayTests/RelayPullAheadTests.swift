import Foundation
import RecordKeeper
import RecordKeeperPostgres
@testable import RecordKeeperRelay
import TestHelpers
import Testing

/// Pulls read ahead (docs/RELAY.md "Pulls read ahead"): while an answer of several pages with
/// more to come travels, the relay pulls the answer that follows it, and hands it only to a
/// pull asking exactly for it.
@Suite(.timeLimit(.minutes(10)))
struct RelayPullAheadTests {
    private func pullLines(_ relay: RelayHarness) -> [String] {
        relay.lines.lines.filter { $0.contains("route=/v1/pull ") }
    }

    @Test func `a device catching up gets each answer after the first read ahead, its pages those of sequential pulls`() async throws {
        let inner = InMemorySyncServer()
        try await fillAlice(inner)
        let direct = try await sequentialPages(inner, limit: 2)
        try await withRelay(server: inner, { $0.maxPagesPerAnswer = 3 }) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let pulled = try await sequentialPages(client, limit: 2)
            #expect(pulled == direct)
            #expect(relay.server.calls.pulls == (direct.count + 2) / 3, "each answer read once from the server")
            let lines = pullLines(relay)
            #expect(lines.count == (direct.count + 2) / 3, "\(lines)")
            #expect(lines.filter { $0.contains("readAhead=yes") }.count == lines.count - 1, "\(lines)")
            #expect(lines.first?.contains("readAhead") == false, "\(lines)")
        }
    }

    @Test func `a push to the space drops its answers read ahead`() async throws {
        let inner = InMemorySyncServer()
        try await withRelay(server: inner, { $0.maxPagesPerAnswer = 2 }) { relay in
            let alice = try RelayHarness.token(space: "alice")
            let five = ["a": "1", "b": "1", "c": "1", "d": "1", "e": "1"]
            #expect(try await relay.push([.writing(five, sequence: 1)], token: alice).status == 200)
            // Pages of one, two per answer: a and b answered, c and d read ahead.
            let first = try await relay.pull("after=0&limit=1&pages=2", token: alice)
            let next = try #require(first.header(RelayWire.nextCursorHeader))
            let rewrite = SyncOperation(
                device: "phone", sequence: 2,
                changes: [SyncChange(collection: "notes", key: "d", value: .payload(Data("2".utf8)), base: SyncServerVersion(1))])
            #expect(try await relay.push([rewrite], token: alice).status == 200)
            // Read again, after the push: c and e, not d at its version before it.
            let second = try await relay.pull(next + "&limit=1&pages=2", token: alice)
            let pages = try String(decoding: second.body, as: UTF8.self).split(separator: "\n")
                .map { try SyncWireJSON.decodePage(Data($0.utf8)) }
            #expect(pages.flatMap(\.changes).map(\.key) == ["c", "e"])
            #expect(pullLines(relay).last?.contains("readAhead") == false, "\(pullLines(relay))")
        }
    }

    @Test func `a push to the space drops an answer still being read ahead without cancelling its read`() async throws {
        let ahead = RelayPullAhead(capacity: 4, keptFor: .seconds(3600))
        let key = RelayPullAhead.Key(space: "alice", cursor: .start, limit: 1, collections: nil, pages: 2)
        let reading = Gate()
        let release = Gate()
        let cancelled = Gate()
        let finished = Gate()
        ahead.start(key) {
            await reading.open()
            await release.wait()
            if Task.isCancelled { await cancelled.open() }
            await finished.open()
            return []
        }
        await reading.wait()
        ahead.forget(space: "alice")
        #expect(ahead.claim(key) == nil, "dropped: the next pull reads the database again")
        #expect(ahead.count == 0)
        // Still running, it counts toward the capacity: no second read starts beside it.
        #expect(ahead.orphanCount == 1)
        await release.open()
        await finished.wait()
        #expect(!(await cancelled.opened), "a cancelled read would cancel its statement and cost the pool a connection")
        try await waitUntil("the orphan is gone once its read ended") { ahead.orphanCount == 0 }
    }

    @Test func `a read ahead dropped by a push still counts toward the capacity, and draining cancels it`() async throws {
        let ahead = RelayPullAhead(capacity: 1, keptFor: .seconds(3600))
        let first = RelayPullAhead.Key(space: "alice", cursor: .start, limit: 1, collections: nil, pages: 2)
        let second = RelayPullAhead.Key(space: "bob", cursor: .start, limit: 1, collections: nil, pages: 2)
        let reading = Gate()
        let never = Gate()
        let cancelled = Gate()
        ahead.start(first) {
            await reading.open()
            do { try await never.waitUnlessCancelled() } catch { await cancelled.open() }
            return nil
        }
        await reading.wait()
        ahead.forget(space: "alice")
        ahead.start(second) { [] }
        #expect(ahead.count == 0, "the dropped read still holds the one place")
        ahead.drain()
        await cancelled.wait()
        #expect(ahead.orphanCount == 0)
    }

    @Test func `an answer read ahead goes only to a pull asking exactly for it`() async throws {
        let inner = InMemorySyncServer()
        try await fillAlice(inner)
        // The harness keeps answers an hour, longer than the test can take even under the
        // sanitizer: the pulls in between drop answers older than that.
        try await withRelay(server: inner, { $0.maxPagesPerAnswer = 3 }) { relay in
            let alice = try RelayHarness.token(space: "alice")
            let first = try await relay.pull("after=0&limit=2&pages=3", token: alice)
            #expect(first.status == 200)
            let next = try #require(first.header(RelayWire.nextCursorHeader))
            // Another limit, another number of pages, a token granting one collection only, and
            // another space: each pulled (or refused) anew, never the answer read ahead.
            #expect(try await relay.pull(next + "&limit=3&pages=3", token: alice).status == 200)
            #expect(try await relay.pull(next + "&limit=2&pages=2", token: alice).status == 200)
            let narrow = try RelayHarness.token(space: "alice", collections: ["other"])
            let narrowed = try await relay.pull(next + "&limit=2&pages=3&collections=%5B%22other%22%5D", token: narrow)
            #expect(narrowed.status == 200)
            #expect(try SyncWireJSON.decodePage(narrowed.body).changes.isEmpty)
            let bob = try RelayHarness.token(space: "bob")
            #expect(try await relay.pull(next + "&limit=2&pages=3&space=alice", token: bob).status == 403)
            #expect(!pullLines(relay).contains { $0.contains("readAhead") }, "\(pullLines(relay))")
            // The pull asking for it gets it.
            let claimed = try await relay.pull(next + "&limit=2&pages=3", token: alice)
            #expect(claimed.status == 200)
            #expect(pullLines(relay).last?.contains("readAhead=yes") == true, "\(pullLines(relay))")
            let expected = try await sequentialPages(inner, limit: 2)
            let lines = String(decoding: claimed.body, as: UTF8.self).split(separator: "\n")
            #expect(try lines.map { try SyncWireJSON.decodePage(Data($0.utf8)) } == Array(expected[3..<6]))
        }
    }

    @Test func `an answer read ahead longer ago than it is kept is not handed out`() async throws {
        let inner = InMemorySyncServer()
        try await fillAlice(inner)
        let direct = try await sequentialPages(inner, limit: 2)
        try await withRelay(server: inner, { $0.maxPagesPerAnswer = 3; $0.pullAheadKeptFor = .zero }) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let pulled = try await sequentialPages(client, limit: 2)
            #expect(pulled == direct)
            #expect(!pullLines(relay).contains { $0.contains("readAhead") }, "\(pullLines(relay))")
        }
    }

    @Test func `a relay that reads nothing ahead answers as before`() async throws {
        let inner = InMemorySyncServer()
        try await fillAlice(inner)
        let direct = try await sequentialPages(inner, limit: 2)
        try await withRelay(server: inner, { $0.maxPagesPerAnswer = 3; $0.pullsAhead = 0 }) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            let pulled = try await sequentialPages(client, limit: 2)
            #expect(pulled == direct)
            #expect(relay.server.calls.pulls == (direct.count + 2) / 3)
            #expect(!pullLines(relay).contains { $0.contains("readAhead") })
        }
    }

    @Test func `a read ahead that fails leaves the answer to the device's own pull`() async throws {
        let watched = WatchedPullServer(InMemorySyncServer())
        try await fillAlice(watched)
        let direct = try await sequentialPages(watched.inner, limit: 2)
        try await withRelay(server: watched, { $0.maxPagesPerAnswer = 3 }) { relay in
            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            // The read ahead of the second answer meets the failure; the device's pull of it
            // pulls again.
            watched.failOnce(after: direct[2].cursor)
            let pulled = try await sequentialPages(client, limit: 2)
            #expect(pulled == direct)
            let lines = pullLines(relay)
            #expect(lines.count == (direct.count + 2) / 3, "\(lines)")
            #expect(lines.count > 2 && !lines[1].contains("readAhead") && lines[2].contains("readAhead=yes"), "\(lines)")
        }
    }
}

/// A pull read ahead against PostgreSQL, with a push between.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct RelayPullAheadPostgresTests {
    @Test func `a change pushed while an answer is read ahead reaches the device by its next pulls`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "relay_ahead") { conninfo, _ in
            let server = try await PostgresSyncServer.connect(conninfo, connections: 2)
            try await fillAlice(server)
            try await withRelay(server: server, { $0.maxPagesPerAnswer = 2 }) { relay in
                let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
                var cursor = SyncCursor.start
                var keys: [String] = []
                var pushed = false
                while true {
                    let page = try await client.pull(space: "alice", after: cursor, limit: 3)
                    keys += page.changes.map(\.key)
                    cursor = page.cursor
                    if !pushed {
                        // After the first answer: the one after it is being read ahead.
                        pushed = true
                        _ = try await server.push(space: "alice", operations: [.writing(["late": "x"], sequence: 6)])
                    }
                    if !page.hasMore { break }
                }
                if keys.last != "late" {
                    // The last answer was read before the push: the next pull brings it.
                    let after = try await client.pull(space: "alice", after: cursor, limit: 3)
                    keys += after.changes.map(\.key)
                }
                #expect(keys.count == 26 && keys.last == "late" && Set(keys).count == 26, "\(keys)")
                let lines = relay.lines.lines.filter { $0.contains("route=/v1/pull ") }
                #expect(lines.contains { $0.contains("readAhead=yes") }, "\(lines)")
            }
        }
    }
}
