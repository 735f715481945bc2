import Foundation
import RecordKeeper
@testable import RecordKeeperPostgres
import TestHelpers
import Testing

/// Spaces over two PostgreSQL servers (`RECORDKEEPER_TEST_POSTGRES` and
/// `RECORDKEEPER_TEST_POSTGRES_2`), each test in a private schema on each: where spaces land,
/// their guarantees, a restart, an override, and a map that would move spaces.
@Suite(.enabled(if: TestPostgres.twoServersEnabled, TestPostgres.twoServersDisabledReason), .timeLimit(.minutes(5)))
struct ShardedSyncServerTests {
    /// Two shards, "a" on the first server and "b" on the second, each a fresh schema.
    private func withTwoShards(_ body: (_ a: String, _ b: String) async throws -> Void) async throws {
        let second = try TestPostgres.requireSecondConninfo()
        try await TestPostgres.withPrivateSchema(prefix: "shard_a") { a, _ in
            try await TestPostgres.withPrivateSchema(on: second, prefix: "shard_b") { b, _ in
                try await body(a, b)
            }
        }
    }

    private func map(_ shards: [(String, String)], overrides: [String: String] = [:]) throws -> SyncShardMap {
        try SyncShardMap(shards: shards.map { SyncShardMap.Shard(name: $0.0, conninfo: $0.1) }, overrides: overrides)
    }

    /// `count` new spaces the hash puts on `shard` of `of` shards.
    private func spaces(on shard: Int, of count: Int, _ wanted: Int) -> [String] {
        var found: [String] = []
        while found.count < wanted {
            let space = TestPostgres.space("shard")
            if SyncShardMap.hashShard(of: space, count: count) == shard { found.append(space) }
        }
        return found
    }

    /// The spaces a database holds, read by connecting to it directly.
    private func spacesHeld(_ conninfo: String) async throws -> Set<String> {
        let connection = try await PostgresConnection(conninfo: conninfo)
        return try await connection.transaction(operation: "read the spaces") { connection in
            let rows = try connection.execute("SELECT space FROM recordkeeper_sync_spaces")
            return Set(try (0..<rows.rowCount).map { try rows.string($0, 0) })
        }
    }

    private func pushOne(_ server: any RecordSyncServer, _ space: String, _ text: String = "x") async throws {
        let outcomes = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "n", text, base: nil))])
        #expect(outcomes.map(\.result) == [.applied(SyncServerVersion(1))])
    }

    @Test func `spaces land on both databases, each where the map routes it`() async throws {
        try await withTwoShards { a, b in
            let server = try await ShardedPostgresSyncServer.connect(try map([("a", a), ("b", b)]), connections: 2)
            let onA = spaces(on: 0, of: 2, 4)
            let onB = spaces(on: 1, of: 2, 4)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for space in onA + onB { group.addTask { try await pushOne(server, space) } }
                try await group.waitForAll()
            }
            #expect(try await spacesHeld(a) == Set(onA))
            #expect(try await spacesHeld(b) == Set(onB))
            #expect(try await server.misplacedSpaces().isEmpty)
        }
    }

    @Test func `every space keeps its guarantees on its shard, spaces of both shards at once`() async throws {
        try await withTwoShards { a, b in
            let server = try await ShardedPostgresSyncServer.connect(try map([("a", a), ("b", b)]), connections: 3)
            let spaces = spaces(on: 0, of: 2, 2) + spaces(on: 1, of: 2, 2)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for space in spaces { group.addTask { try await checkSpaceGuarantees(of: server, space: space) } }
                try await group.waitForAll()
            }
            // What the sharded server answers is what the shard itself holds.
            let direct = try await PostgresSyncServer.connect(b)
            #expect(try await direct.snapshot(space: spaces[3]) == (try await server.snapshot(space: spaces[3])))
            #expect(try await direct.snapshot(space: spaces[0]).isEmpty)
        }
    }

    @Test func `a server restarted with the same map finds every space where it was`() async throws {
        try await withTwoShards { a, b in
            let json = Data(
                """
                {"version": 1, "shards": [{"name": "a", "conninfo": "\(a)"}, {"name": "b", "conninfo": "\(b)"}]}
                """.utf8)
            let spaces = spaces(on: 0, of: 2, 3) + spaces(on: 1, of: 2, 3)
            do {
                let first = try await ShardedPostgresSyncServer.connect(try SyncShardMap(json: json))
                for space in spaces { try await pushOne(first, space, "in \(space)") }
            }
            let again = try await ShardedPostgresSyncServer.connect(try SyncShardMap(json: json))
            try await again.checkPlacement()
            for space in spaces {
                #expect(try await again.snapshot(space: space) == ["notes/n": .text("in \(space)")], "\(space)")
            }
        }
    }

    @Test func `an override moves a named space to its shard`() async throws {
        try await withTwoShards { a, b in
            let hot = spaces(on: 0, of: 2, 1)[0]
            let other = spaces(on: 0, of: 2, 1)[0]
            let server = try await ShardedPostgresSyncServer.connect(try map([("a", a), ("b", b)], overrides: [hot: "b"]))
            try await pushOne(server, hot)
            try await pushOne(server, other)
            #expect(try await spacesHeld(b) == [hot])
            #expect(try await spacesHeld(a) == [other])
            #expect(try await server.misplacedSpaces().isEmpty)
        }
    }

    @Test func `a map that would move existing spaces is found, refused, and pinned by the overrides printed`() async throws {
        try await withTwoShards { a, b in
            try await TestPostgres.withPrivateSchema(prefix: "shard_c") { c, _ in
                let two = try await ShardedPostgresSyncServer.connect(try map([("a", a), ("b", b)]))
                // Spaces the third shard would take from each of the first two.
                let taken = [0, 1].map { shard in
                    var space = ""
                    repeat { space = spaces(on: shard, of: 2, 1)[0] } while SyncShardMap.hashShard(of: space, count: 3) != 2
                    return space
                }
                let staying = spaces(on: 1, of: 2, 6).filter { SyncShardMap.hashShard(of: $0, count: 3) == 1 }
                for space in taken + staying { try await pushOne(two, space, "kept \(space)") }

                let three = try await ShardedPostgresSyncServer.connect(try map([("a", a), ("b", b), ("c", c)]))
                let misplaced = try await three.misplacedSpaces()
                #expect(
                    Set(misplaced) == [
                        MisplacedSyncSpace(space: taken[0], foundOn: "a", routedTo: "c"),
                        MisplacedSyncSpace(space: taken[1], foundOn: "b", routedTo: "c"),
                    ])
                let refusal = await #expect(throws: SyncError.self) { try await three.checkPlacement() }
                #expect(refusal?.code == .configuration)
                #expect(refusal?.message.contains("would move 2 existing space(s)") == true, "\(String(describing: refusal))")

                let overrides = ShardedPostgresSyncServer.pinningOverrides(for: misplaced)
                #expect(overrides == [taken[0]: "a", taken[1]: "b"])
                let pinned = try await ShardedPostgresSyncServer.connect(
                    try map([("a", a), ("b", b), ("c", c)], overrides: overrides))
                try await pinned.checkPlacement()
                for space in taken + staying {
                    #expect(try await pinned.snapshot(space: space) == ["notes/n": .text("kept \(space)")])
                }
                // Shards listed in another order: every space is found on the wrong one.
                let swapped = try await ShardedPostgresSyncServer.connect(try map([("b", b), ("a", a)]))
                #expect(Set(try await swapped.misplacedSpaces().map(\.space)) == Set(taken + staying))
            }
        }
    }

    @Test func `a space another shard holds is refused at its first request, nothing written beside it`() async throws {
        try await withTwoShards { a, b in
            let space = spaces(on: 0, of: 2, 1)[0]
            let right = try await ShardedPostgresSyncServer.connect(try map([("a", a), ("b", b)]))
            try await pushOne(right, space)
            // A server reading another map (the shards in the other order), started without
            // the placement check: the space's first request finds it on shard "a".
            let wrong = try await ShardedPostgresSyncServer.connect(try map([("b", b), ("a", a)]))
            for attempt in 0..<2 {
                let refused = await #expect(throws: SyncError.self) {
                    _ = try await wrong.push(space: space, operations: [operation("laptop", 1, put("notes", "m", "x", base: nil))])
                }
                #expect(refused?.code == .serverFailure)
                #expect(refused?.message.contains("is on shard 'a' but the shard map routes it to 'b'") == true, "\(attempt)")
            }
            await #expect(throws: SyncError.self) { _ = try await wrong.pull(space: space, after: .start, limit: 10) }
            // Bad input is invalidRequest, as from one server, before any routing.
            let badLimit = await #expect(throws: SyncError.self) { _ = try await wrong.pull(space: space, after: .start, limit: 0) }
            #expect(badLimit?.code == .invalidRequest)
            let emptySpace = await #expect(throws: SyncError.self) {
                _ = try await wrong.push(space: "", operations: [operation("laptop", 1, put("notes", "m", "x", base: nil))])
            }
            #expect(emptySpace?.code == .invalidRequest)
            #expect(try await spacesHeld(b).isEmpty)
            #expect(try await right.snapshot(space: space) == ["notes/n": .text("x")])
        }
    }

    @Test func `a space pulled before any push, then created on another shard by an older map, is refused, not split`()
        async throws
    {
        try await withTwoShards { a, b in
            let space = spaces(on: 0, of: 2, 1)[0]
            let newer = try await ShardedPostgresSyncServer.connect(try map([("a", a), ("b", b)]))
            // A device of the new map asks first: nothing anywhere yet.
            #expect(try await newer.pull(space: space, after: .start, limit: 10).changes.isEmpty)
            // A relay still reading the old map (the shards in the other order) creates it on "b".
            let older = try await ShardedPostgresSyncServer.connect(try map([("b", b), ("a", a)]))
            try await pushOne(older, space, "from the old map")
            // The new map's next request finds it there, and writes nothing on "a".
            let refused = await #expect(throws: SyncError.self) {
                _ = try await newer.push(space: space, operations: [operation("laptop", 1, put("notes", "m", "x", base: nil))])
            }
            #expect(refused?.message.contains("is on shard 'b' but the shard map routes it to 'a'") == true,
                    "\(String(describing: refused))")
            #expect(try await spacesHeld(a).isEmpty, "no second history")
        }
    }

    @Test func `with the migration lock held on every shard, a current schema is served and connected to without waiting`()
        async throws
    {
        try await withTwoShards { a, b in
            let shards = try map([("a", a), ("b", b)])
            _ = try await ShardedPostgresSyncServer.connect(shards)  // migrates both schemas
            // Another session holds the lock migrations take, on each database: a schema check
            // per request, or a migration of a current schema, would wait for it and time out.
            var holders: [PostgresConnection] = []
            for conninfo in [a, b] {
                let holder = try await PostgresConnection(conninfo: conninfo)
                try await holder.execute("SELECT pg_advisory_lock($1)", [.int64(PostgresSyncSchema.lockKey)])
                holders.append(holder)
            }
            let server = try await ShardedPostgresSyncServer.connect(shards, timeout: .seconds(10))
            let spaces = spaces(on: 0, of: 2, 1) + spaces(on: 1, of: 2, 1)
            for space in spaces {
                try await pushOne(server, space)
                #expect(try await server.pull(space: space, after: .start, limit: 10).changes.count == 1)
            }
            for holder in holders {
                try await holder.execute("SELECT pg_advisory_unlock($1)", [.int64(PostgresSyncSchema.lockKey)])
            }
        }
    }

    @Test func `a live pull held on one sharded server is answered by a push through another, on either shard`() async throws {
        try await withTwoShards { a, b in
            let shards = try map([("a", a), ("b", b)])
            let x = try await ShardedPostgresSyncServer.connect(shards)
            let y = try await ShardedPostgresSyncServer.connect(shards)
            for space in spaces(on: 0, of: 2, 1) + spaces(on: 1, of: 2, 1) {
                try await pushOne(y, space)
                let held = Task {
                    try await x.pull(space: space, after: SyncCursor(counter: 1), limit: 10, collections: nil, wait: .seconds(300))
                }
                // A handshake on the shard's server: the pull is held and its wake session is up.
                let shard = x.server(for: space)
                try await waitUntil("a held pull on the space's shard") {
                    shard.heldPulls == 1 && shard.wakeSession.sessions >= 1
                }
                let outcomes = try await y.push(
                    space: space, operations: [operation("laptop", 1, put("notes", "m", "late", base: nil))])
                #expect(outcomes.map(\.result) == [.applied(SyncServerVersion(2))])
                let page = try await held.value
                #expect(page.changes.map(\.key) == ["m"], "\(space)")
                #expect(page.cursor == SyncCursor(counter: 2))
            }
        }
    }
}
