import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// The device side of sync against a real PostgreSQL (`RECORDKEEPER_TEST_POSTGRES`, see
/// ``TestPostgres``): three local stores converge through `PostgresSyncServer`, in a private
/// PostgreSQL schema dropped afterwards.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct RecordSyncPostgresTests {
    /// Runs `body` with a server whose connections use a fresh schema, dropped afterwards.
    private func withPrivateServer(_ body: (PostgresSyncServer) async throws -> Void) async throws {
        try await TestPostgres.withPrivateConnections { connect, _ in
            try await body(try await PostgresSyncServer(connection: try await connect()))
        }
    }

    private func text(_ store: RecordStore, _ collection: String) async throws -> [String: String] {
        (try await store.read(collection) ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
    }

    @Test func `three stores converge: different keys, one conflict resolved, a deletion, another space sees nothing`()
        async throws
    {
        try await withPrivateServer { server in
            try await withTemporaryDirectory { directory in
                let stores = (0..<3).map { RecordStore(url: directory.appendingPathComponent("device-\($0).sqlite")) }
                let syncs = stores.map { RecordSync(store: $0, server: server) }
                for sync in syncs { try await sync.start(space: "alice", collections: ["notes"]) }
                // Different keys on every device; device 2 holds a record before it syncs.
                for (index, store) in stores.enumerated() {
                    try await store.put("notes", key: "device-\(index)", data: Data("from \(index)".utf8))
                }
                try await stores[0].put("notes", key: "doomed", data: Data("to delete".utf8))
                for _ in 0..<2 { for sync in syncs { _ = try await sync.sync() } }
                let union = [
                    "device-0": "from 0", "device-1": "from 1", "device-2": "from 2", "doomed": "to delete",
                ]
                for store in stores { #expect(try await text(store, "notes") == union) }

                // Concurrent edits of one key: one reported conflict, both values kept.
                try await stores[0].put("notes", key: "shared", data: Data("zero".utf8))
                try await stores[1].put("notes", key: "shared", data: Data("one".utf8))
                var removal = RecordChanges()
                removal["doomed"] = nil
                try await stores[2].apply("notes", changes: removal)
                var conflicts: [SyncRecordConflict] = []
                for sync in syncs { conflicts += try await sync.sync().newConflicts }
                #expect(conflicts.count == 1)
                #expect(conflicts.first?.local == Data("one".utf8))
                #expect(conflicts.first?.server == Data("zero".utf8))
                try await stores[1].resolveSyncConflict("notes", key: "shared", keeping: .local)
                for _ in 0..<2 { for sync in syncs { _ = try await sync.sync() } }
                var expected = union
                expected["doomed"] = nil
                expected["shared"] = "one"
                for store in stores {
                    #expect(try await text(store, "notes") == expected)
                    #expect(try await store.syncConflicts().isEmpty)
                    #expect(try await store.syncStatus()?.pendingOperations == 0)
                }

                // Another space on the same server sees nothing of alice's.
                let bob = RecordSync(
                    store: RecordStore(url: directory.appendingPathComponent("bob.sqlite")), server: server)
                try await bob.start(space: "bob", collections: ["notes"])
                #expect(try await bob.sync().pulledChanges == 0)
                #expect(try await bob.store.read("notes") == nil)
            }
        }
    }
}
