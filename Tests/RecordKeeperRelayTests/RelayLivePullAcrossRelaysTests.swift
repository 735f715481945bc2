import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import TestHelpers
import Testing

/// Two relays, each over its own `PostgresSyncServer` on one database (as two relay
/// processes are): a device holding a live pull on relay A receives a push made through
/// relay B, by either wake.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct RelayLivePullAcrossRelaysTests {
    @Test(arguments: [PostgresSyncServer.LiveWake.listen, .poll(every: .milliseconds(5))])
    func `a pull held on relay A is answered by a push through relay B`(wake: PostgresSyncServer.LiveWake) async throws {
        try await TestPostgres.withPrivateSchema(prefix: "relay_live") { conninfo, _ in
            let x = try await PostgresSyncServer.connect(conninfo, liveWake: wake)
            let y = try await PostgresSyncServer.connect(conninfo, liveWake: wake)
            try await withRelay(server: x) { a in
                try await withRelay(server: y) { b in
                    let space = "live-\(UUID().uuidString)"
                    let token = try RelayHarness.token(space: space)
                    let onA = HTTPSyncServer(url: URL(string: a.base)!) { token }
                    let onB = HTTPSyncServer(url: URL(string: b.base)!) { token }
                    let held = Task {
                        try await onA.pull(space: space, after: .start, limit: 10, collections: nil, wait: .seconds(60))
                    }
                    try await waitUntil("relay A holds the pull, its wake session set up") {
                        a.relay.livePullsHeld == 1 && x.heldPulls == 1 && x.wakeSession.sessions >= 1
                    }
                    _ = try await onB.push(space: space, operations: [.writing(["a": "1"], sequence: 1)])
                    let page = try await held.value
                    #expect(page.changes.map(\.key) == ["a"])
                    #expect(page.cursor == SyncCursor(counter: 1))
                }
            }
        }
    }
}
