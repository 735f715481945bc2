import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import TestHelpers
import Testing

/// A `recordkeeper-relay serve` process whose query connections go through PgBouncer in
/// transaction mode (`RECORDKEEPER_TEST_PGBOUNCER`, 4 server connections), with more pool
/// connections than that: devices of several spaces sync at once, a concurrent edit conflicts.
@Suite(.enabled(if: TestPostgres.pgbouncerEnabled, TestPostgres.pgbouncerDisabledReason), .timeLimit(.minutes(10)))
struct RelayThroughPgBouncerTests {
    @Test func `devices of several spaces sync at once through a relay behind PgBouncer, and a concurrent edit conflicts`()
        async throws
    {
        let pooled = try TestPostgres.requirePgBouncer()
        try await withTemporaryDirectory { directory in
            let secret = directory.appendingPathComponent("secret")
            try Data(LiveRelay.secret).write(to: secret)
            let process = try await RelayProcess.serve(
                ["--database", pooled, "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path, "--pool", "6"],
                in: directory)
            let relay = LiveRelay(directory: directory, conninfo: pooled, secretFile: secret, process: process)
            do {
                let spaces = (0..<4).map { _ in "pgbouncer-relay-\(UUID().uuidString)" }
                // Two devices per space; every device writes 10 notes, all sync at once, twice.
                var devices: [(space: String, store: RecordStore, sync: RecordSync)] = []
                for space in spaces {
                    for index in 0..<2 {
                        let store = RecordStore(url: directory.appendingPathComponent("\(space)-\(index).sqlite"))
                        let sync = RecordSync(store: store, server: try relay.client(space))
                        try await sync.start(space: space, collections: ["notes"])
                        try await store.write { tx in
                            for n in 0..<10 { try tx.put("notes", key: "\(index)-\(n)", data: Data("\(index) \(n)".utf8)) }
                        }
                        devices.append((space, store, sync))
                    }
                }
                for _ in 0..<2 {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for device in devices { group.addTask { _ = try await device.sync.sync() } }
                        try await group.waitForAll()
                    }
                }
                for device in devices {
                    let notes = try await device.store.read("notes") ?? [:]
                    #expect(notes.count == 20, "\(device.space): \(notes.count) notes")
                }

                // The two devices of the first space edit one note at once: the second to
                // sync gets a conflict with the first's value.
                let (first, second) = (devices[0], devices[1])
                try await first.store.put("notes", key: "0-0", data: Data("first".utf8))
                try await second.store.put("notes", key: "0-0", data: Data("second".utf8))
                #expect(try await first.sync.sync().newConflicts.isEmpty)
                #expect(try await second.sync.sync().newConflicts.map(\.key) == ["0-0"])
                let conflict = try #require(try await second.store.syncConflicts().first)
                #expect(conflict.server == Data("first".utf8))

                // The same data as a direct connection reads.
                let direct = try await PostgresSyncServer.connect(try TestPostgres.requireConninfo())
                let page = try await direct.pull(space: spaces[0], after: .start, limit: 100)
                #expect(page.changes.count == 20)
                #expect(page.changes.first { $0.key == "0-0" }?.value == .payload(Data("first".utf8)))
            } catch {
                await relay.process.kill()
                throw error
            }
            let stopped = try await relay.process.terminate()
            #expect(stopped.status == 0, "\(stopped.log)")
        }
    }

    /// The pull waits up to 300 s, longer than the test may run: only the wake answers it in time
    /// (LISTEN through the pooler instead never hears the push).
    @Test(
        .timeLimit(.minutes(3)),
        .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
    func `a live pull through a relay behind PgBouncer is woken by LISTEN on its direct wake session`() async throws {
        let pooled = try TestPostgres.requirePgBouncer()
        let direct = try TestPostgres.requireConninfo()
        try await withTemporaryDirectory { directory in
            let secret = directory.appendingPathComponent("secret")
            try Data(LiveRelay.secret).write(to: secret)
            // Two relays, the LISTEN wake on a direct session, queries through the pooler.
            var relays: [LiveRelay] = []
            for _ in 0..<2 {
                let process = try await RelayProcess.serve(
                    [
                        "--database", pooled, "--wake-database", direct, "--live-wake", "listen",
                        "--max-pull-wait", "300", "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path, "--pool", "2",
                    ], in: directory)
                relays.append(LiveRelay(directory: directory, conninfo: pooled, secretFile: secret, process: process))
            }
            do {
                let space = "pgbouncer-live-\(UUID().uuidString)"
                let first = SyncOperation(
                    device: "phone", sequence: 1,
                    changes: [SyncChange(collection: "notes", key: "a", value: .payload(Data("A".utf8)), base: nil)])
                _ = try await relays[1].client(space).push(space: space, operations: [first])
                let held = Task { [client = try relays[0].client(space)] in
                    try await client.pull(
                        space: space, after: SyncCursor(counter: 1), limit: 10, collections: nil, wait: .seconds(300))
                }
                try await waitUntil("relay 0 holds the pull") {
                    let metrics = try await request("GET", relays[0].process.url + "/metrics")
                    return String(decoding: metrics.body, as: UTF8.self).contains("recordkeeper_relay_live_pulls_held 1")
                }
                let second = SyncOperation(
                    device: "phone", sequence: 2, predecessor: .operation(first.id),
                    changes: [SyncChange(collection: "notes", key: "b", value: .payload(Data("B".utf8)), base: nil)])
                _ = try await relays[1].client(space).push(space: space, operations: [second])
                let page = try await held.value
                #expect(page.changes.map(\.key) == ["b"])
            } catch {
                for relay in relays { await relay.process.kill() }
                throw error
            }
            for relay in relays {
                let stopped = try await relay.process.terminate()
                #expect(stopped.status == 0, "\(stopped.log)")
            }
        }
    }

    /// LISTEN through a transaction-pooling PgBouncer hears nothing: a relay asked to wake so
    /// refuses to start, where it would make every held pull wait out its wait.
    @Test(.timeLimit(.minutes(3)))
    func `a relay whose LISTEN wake goes through PgBouncer refuses to start and says why`() async throws {
        let pooled = try TestPostgres.requirePgBouncer()
        try await withTemporaryDirectory { directory in
            let secret = directory.appendingPathComponent("secret")
            try Data(LiveRelay.secret).write(to: secret)
            let refused = try await RelayProcess.run([
                "serve", "--database", pooled, "--live-wake", "listen",
                "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path,
            ])
            #expect(refused.status == 78, "\(refused.error)")
            #expect(refused.error.contains("did not hear a notification"), "\(refused.error)")
            #expect(refused.error.contains("--wake-database"), "\(refused.error)")
        }
    }
}
