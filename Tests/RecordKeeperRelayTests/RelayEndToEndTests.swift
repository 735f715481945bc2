import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import TestHelpers
import Testing

/// Devices syncing through real `recordkeeper-relay` processes on loopback, against the test
/// PostgreSQL: convergence, a conflict, offline catch-up, another person's token, and the
/// relay killed mid-push.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct RelayEndToEndTests {
    private func strings(_ store: RecordStore, _ collection: String) async throws -> [String: String] {
        (try await store.read(collection) ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
    }

    private func stores(_ count: Int, in directory: URL) -> [RecordStore] {
        (0..<count).map { RecordStore(url: directory.appendingPathComponent("device-\($0).sqlite")) }
    }

    @Test func `three devices converge through the relay, a concurrent edit conflicts, an offline device catches up`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            try await withLiveRelay(in: directory) { relay in
                let server = try relay.client("alice")
                let stores = stores(3, in: directory)
                let syncs = stores.map { RecordSync(store: $0, server: server) }
                for sync in syncs { try await sync.start(space: "alice", collections: ["notes"]) }
                for (index, store) in stores.enumerated() {
                    try await store.write { tx in
                        for n in 0..<5 { try tx.put("notes", key: "\(index)-\(n)", data: Data("note \(index) \(n)".utf8)) }
                    }
                }
                // Devices 0 and 1 sync twice; device 2 stays offline, then catches up.
                for _ in 0..<2 { for sync in syncs.prefix(2) { _ = try await sync.sync() } }
                let caughtUp = try await syncs[2].sync()
                #expect(caughtUp.pulledChanges == 10)
                for sync in syncs.prefix(2) { _ = try await sync.sync() }
                var expected: [String: String] = [:]
                for index in 0..<3 { for n in 0..<5 { expected["\(index)-\(n)"] = "note \(index) \(n)" } }
                for store in stores { #expect(try await strings(store, "notes") == expected) }

                try await stores[0].put("notes", key: "0-0", data: Data("from 0".utf8))
                try await stores[1].put("notes", key: "0-0", data: Data("from 1".utf8))
                #expect(try await syncs[0].sync().newConflicts.isEmpty)
                #expect(try await syncs[1].sync().newConflicts.map(\.key) == ["0-0"])
                let conflict = try #require(try await stores[1].syncConflicts().first)
                #expect(conflict.local == Data("from 1".utf8) && conflict.server == Data("from 0".utf8))
                try await stores[1].resolveSyncConflict("notes", key: "0-0", keeping: .local)
                _ = try await syncs[1].sync()
                for sync in syncs { _ = try await sync.sync() }
                for store in stores { #expect(try await strings(store, "notes")["0-0"] == "from 1") }
            }
        }
    }

    @Test func `bob's token is forbidden in alice's space, and nothing of alice's is read or written`() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveRelay(in: directory) { relay in
                let alice = RecordStore(url: directory.appendingPathComponent("alice.sqlite"))
                let aliceSync = RecordSync(store: alice, server: try relay.client("alice"))
                try await aliceSync.start(space: "alice", collections: ["notes"])
                try await alice.put("notes", key: "diary", data: Data("alice's".utf8))
                _ = try await aliceSync.sync()

                let bob = RecordStore(url: directory.appendingPathComponent("bob.sqlite"))
                let bobSync = RecordSync(store: bob, server: try relay.client("bob"))
                try await bobSync.start(space: "alice", collections: ["notes"])
                try await bob.put("notes", key: "diary", data: Data("overwritten".utf8))
                let error = await #expect(throws: SyncError.self) { try await bobSync.sync() }
                #expect(error?.code == .forbidden, "\(String(describing: error))")
                let pulled = await #expect(throws: SyncError.self) {
                    _ = try await relay.client("bob").pull(space: "alice", after: .start, limit: 10)
                }
                #expect(pulled?.code == .forbidden)
                #expect(try await strings(bob, "notes") == ["diary": "overwritten"], "nothing of alice's reached bob")
                #expect(try await bob.syncStatus()?.pendingOperations == 1)

                let direct = try await PostgresSyncServer.connect(relay.conninfo)
                let page = try await direct.pull(space: "alice", after: .start, limit: 10)
                #expect(page.changes.map { $0.value } == [.payload(Data("alice's".utf8))])
                #expect(try await direct.pull(space: "bob", after: .start, limit: 10).changes.isEmpty)
            }
        }
    }

    @Test func `a relay killed during a push loses nothing and applies nothing twice`() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveRelay(in: directory) { relay in
                let space = "killed-\(UUID().uuidString)"
                // A push of the test's own holds the space's counter lock, so the relay's push
                // waits inside PostgreSQL while the relay is killed.
                let gate = BlockingGate()
                let holder = try await PostgresSyncServer(
                    connections: [try await PostgresConnection(conninfo: relay.conninfo)],
                    hooks: .init(beforeCommit: { _ in gate.arriveAndWait() }),
                    // The gate stays closed while the test starts and kills processes: a
                    // deadline that passed meanwhile would fail the held push for the load.
                    timeout: .seconds(300))
                let holderPID = await holder.connection.backendProcessID
                let held = Task { try await holder.push(space: space, operations: [.writing(["held": "h"], device: "holder", sequence: 1)]) }
                await gate.arrival()

                let store = RecordStore(url: directory.appendingPathComponent("device.sqlite"))
                let sync = RecordSync(store: store, server: try relay.client(space))
                try await sync.start(space: space, collections: ["notes"])
                try await store.write { tx in
                    for n in 0..<20 { try tx.put("notes", key: "k\(n)", data: Data("v\(n)".utf8)) }
                }
                let pushing = Task { try await sync.sync() }
                try await waitUntilBlocked(by: holderPID)
                await relay.process.kill()
                let lost = await #expect(throws: SyncError.self) { _ = try await pushing.value }
                #expect(lost?.code == .unreachable, "\(String(describing: lost))")
                gate.open()
                _ = try await held.value
                #expect(try await store.syncStatus()?.pendingOperations == 1, "the operation stays pending")

                try await relay.restart()
                let again = RecordSync(store: store, server: try relay.client(space))
                _ = try await again.sync()
                #expect(try await store.syncStatus()?.pendingOperations == 0)
                let direct = try await PostgresSyncServer.connect(relay.conninfo)
                let page = try await direct.pull(space: space, after: .start, limit: 100)
                #expect(page.changes.count == 21)
                // The held push is counter 1; the device's operation is applied once, as 2,
                // whether the killed relay's transaction committed or not.
                #expect(page.cursor == SyncCursor(counter: 2))
            }
        }
    }
}
