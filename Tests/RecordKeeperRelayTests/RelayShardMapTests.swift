import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import TestHelpers
import Testing

/// `recordkeeper-relay` over a shard map of two PostgreSQL servers, as processes: `migrate`
/// migrates every shard, `serve` routes each space to its shard, `check` and `serve` refuse a
/// map that would move existing spaces, and bad maps are refused with the reason.
@Suite(.enabled(if: TestPostgres.twoServersEnabled, TestPostgres.twoServersDisabledReason), .timeLimit(.minutes(10)))
struct RelayShardMapTests {
    /// Writes a map of `shards` (name, conninfo) to `name` in `directory`.
    private func mapFile(_ shards: [(String, String)], overrides: [String: String] = [:], in directory: URL, _ name: String)
        throws -> URL
    {
        let object: [String: Any] = [
            "version": 1,
            "shards": shards.map { ["name": $0.0, "conninfo": $0.1] },
            "overrides": overrides,
        ]
        let url = directory.appendingPathComponent(name)
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        return url
    }

    private func spaceOn(_ shard: Int) -> String {
        while true {
            let space = "relay-shard-\(UUID().uuidString)"
            if SyncShardMap.hashShard(of: space, count: 2) == shard { return space }
        }
    }

    private func spacesHeld(_ conninfo: String) async throws -> Set<String> {
        let server = try await PostgresSyncServer.connect(conninfo)
        return Set(try await server.spaces(after: "", limit: 1000))
    }

    @Test func `migrate and serve with a shard map put each device's space on its shard, and check finds them in place`()
        async throws
    {
        let second = try TestPostgres.requireSecondConninfo()
        try await withTemporaryDirectory { directory in
            try await TestPostgres.withPrivateSchema(prefix: "relay_shard_a") { a, _ in
                try await TestPostgres.withPrivateSchema(on: second, prefix: "relay_shard_b") { b, _ in
                    let map = try mapFile([("a", a), ("b", b)], in: directory, "shards.json")
                    let migrated = try await RelayProcess.run(["migrate", "--shard-map", map.path])
                    #expect(migrated.status == 0, "\(migrated.error)")
                    #expect(migrated.output.contains("shard 'a': the sync schema is at version \(PostgresSyncSchema.currentVersion)"))
                    #expect(migrated.output.contains("shard 'b': the sync schema is at version \(PostgresSyncSchema.currentVersion)"))

                    let secret = directory.appendingPathComponent("secret")
                    try Data(LiveRelay.secret).write(to: secret)
                    let process = try await RelayProcess.serve(
                        ["--shard-map", map.path, "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path, "--pool", "2"],
                        in: directory)
                    let relay = LiveRelay(directory: directory, conninfo: a, secretFile: secret, process: process)
                    let spaces = [spaceOn(0), spaceOn(1)]
                    do {
                        for (index, space) in spaces.enumerated() {
                            let store = RecordStore(url: directory.appendingPathComponent("device-\(index).sqlite"))
                            let sync = RecordSync(store: store, server: try relay.client(space))
                            try await sync.start(space: space, collections: ["notes"])
                            try await store.put("notes", key: "n", data: Data(space.utf8))
                            #expect(try await sync.sync().pushedOperations == 1)
                        }
                        let page = try await relay.client(spaces[1]).pull(space: spaces[1], after: .start, limit: 10)
                        #expect(page.changes.map(\.value) == [.payload(Data(spaces[1].utf8))])
                    } catch {
                        await relay.process.kill()
                        throw error
                    }
                    let stopped = try await relay.process.terminate()
                    #expect(stopped.status == 0, "\(stopped.log)")
                    #expect(stopped.log.contains("serving 2 shards (a, b)"))
                    #expect(try await spacesHeld(a) == [spaces[0]])
                    #expect(try await spacesHeld(b) == [spaces[1]])

                    let checked = try await RelayProcess.run(["check", "--shard-map", map.path])
                    #expect(checked.status == 0, "\(checked.error)")
                    #expect(checked.output.contains("every space is on the shard the map routes it to"))

                    // The shards in the other order: check names both spaces and the overrides
                    // that keep them; serve refuses to start; with those overrides it serves.
                    let swapped = try mapFile([("b", b), ("a", a)], in: directory, "swapped.json")
                    let refused = try await RelayProcess.run(["check", "--shard-map", swapped.path])
                    #expect(refused.status == 65, "\(refused.output) \(refused.error)")
                    #expect(refused.output.contains("misplaced: space '\(spaces[0])' is on shard 'a' but the map routes it to 'b'"))
                    #expect(refused.output.contains("\"\(spaces[1])\":\"b\""), "\(refused.output)")
                    let notServed = try await RelayProcess.run([
                        "serve", "--shard-map", swapped.path, "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path,
                    ])
                    #expect(notServed.status == 78, "\(notServed.error)")
                    #expect(notServed.error.contains("would move 2 existing space(s)"), "\(notServed.error)")
                    let pinned = try mapFile(
                        [("b", b), ("a", a)], overrides: [spaces[0]: "a", spaces[1]: "b"], in: directory, "pinned.json")
                    #expect(try await RelayProcess.run(["check", "--shard-map", pinned.path]).status == 0)
                }
            }
        }
    }

    @Test func `bad shard maps and option mixes are refused with the reason`() async throws {
        try await withTemporaryDirectory { directory in
            let secret = directory.appendingPathComponent("secret")
            try Data(LiveRelay.secret).write(to: secret)
            let serve = ["serve", "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path]
            let duplicate = try mapFile([("a", "host=x"), ("a", "host=y")], in: directory, "duplicate.json")
            let missingShard = try mapFile([("a", "host=x")], overrides: ["alice": "b"], in: directory, "missing.json")
            let empty = try mapFile([], in: directory, "empty.json")
            let cases: [([String], Int32, String)] = [
                (serve + ["--shard-map", duplicate.path], 78, "the shard name 'a' is listed twice"),
                (["migrate", "--shard-map", missingShard.path], 78, "names shard 'b', which the map does not list"),
                (["compact", "--shard-map", empty.path], 78, "it lists no shard"),
                (["check", "--shard-map", directory.appendingPathComponent("nowhere.json").path], 66, "does not exist"),
                (serve + ["--shard-map", duplicate.path, "--database", "host=x"], 64, "--database or --shard-map, not both"),
                (["check", "--database", "host=x"], 64, "unknown option"),
                (["migrate"], 64, "needs --database (or RECORDKEEPER_RELAY_DATABASE) or --shard-map"),
            ]
            for (arguments, status, reason) in cases {
                let result = try await RelayProcess.run(arguments)
                #expect(result.status == status, "\(arguments): \(result.error)")
                #expect(result.error.contains(reason), "\(arguments): \(result.error)")
            }
        }
    }
}
