import Foundation
import RecordKeeper
@testable import RecordKeeperPostgres
import TestHelpers
import Testing

/// A server whose rows were edited behind its back (through SQL in the test's PostgreSQL, as a
/// restored backup or a hand-made fix would): a rewound counter, an operation id recorded for
/// another device, a counter at the bigint maximum, a row the store cannot hold. Each ends in a
/// clear `serverFailure` with nothing lost locally, never a crash, exit 0 or a silent drop.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(5)))
struct SyncTamperedServerTests {
    struct Device {
        let store: RecordStore
        let sync: RecordSync

        init(_ name: String, in directory: URL, space: String, server: any RecordSyncServer) async throws {
            store = RecordStore(url: directory.appendingPathComponent("\(name).sqlite"))
            sync = RecordSync(store: store, server: server)
            try await sync.start(space: space, collections: ["notes"])
        }

        func put(_ key: String, _ value: String) async throws {
            try await store.put("notes", key: key, data: Data(value.utf8))
        }

        func notes() async throws -> [String: String] {
            (try await store.read("notes") ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
        }

        func pending() async throws -> Int { try await store.syncStatus()?.pendingOperations ?? -1 }
    }

    /// Runs one statement on the test server (the edit made behind the sync server's back).
    private func tamper(_ sql: StaticString, _ parameters: [PostgresValue]) async throws {
        let connection = try await TestPostgres.connection()
        try await connection.execute(sql, parameters)
    }

    @Test func `a rewound counter is refused by the device that pushes and by the one that pulls`() async throws {
        try await withTemporaryDirectory { directory in
            let space = TestPostgres.space("rewound")
            let server = try await TestPostgres.server()
            let a = try await Device("a", in: directory, space: space, server: server)
            let b = try await Device("b", in: directory, space: space, server: server)
            for key in ["one", "two", "three"] { try await a.put(key, key) }
            _ = try await a.sync.sync()
            _ = try await b.sync.sync()
            // As if the database were restored from a backup taken at counter 1.
            try await tamper("UPDATE recordkeeper_sync_spaces SET counter = 1 WHERE space = $1", [.text(space)])

            try await a.put("four", "4")
            let pushed = await #expect(throws: SyncError.self) { _ = try await a.sync.sync() }
            #expect(pushed?.code == .serverFailure)
            #expect(pushed?.message.contains("went back") == true, "\(String(describing: pushed))")
            #expect(try await a.notes() == ["one": "one", "two": "two", "three": "three", "four": "4"])
            #expect(try await a.pending() == 1, "not acknowledged: the version it got is taken")

            let pulled = await #expect(throws: SyncError.self) { _ = try await b.sync.sync() }
            #expect(pulled?.code == .serverFailure)
            #expect(pulled?.message.contains("ends at 2, behind it") == true, "\(String(describing: pulled))")
            #expect(try await b.notes() == ["one": "one", "two": "two", "three": "three"])
        }
    }

    @Test func `an operation id the server holds for another device is not taken as applied`() async throws {
        try await withTemporaryDirectory { directory in
            let space = TestPostgres.space("foreign")
            let server = RecordingServer(try await TestPostgres.server())
            let a = try await Device("a", in: directory, space: space, server: server)
            try await a.put("mine", "m")
            // Learn the pending operation's id without delivering it.
            await server.refuseNextPush()
            await #expect(throws: SyncError.self) { _ = try await a.sync.push() }
            let id = try #require(await server.refused.first?.id)
            try await tamper(
                """
                INSERT INTO recordkeeper_sync_operations (space, operation_id, device, sequence, version, outcome)
                VALUES ($1, $2::uuid, 'another device', 7, 1, NULL)
                """, [.text(space), .text(id.uuidString)])

            let error = await #expect(throws: SyncError.self) { _ = try await a.sync.push() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("another device") == true, "\(String(describing: error))")
            #expect(error?.message.contains(id.uuidString) == true)
            #expect(try await a.pending() == 1, "the change is not dropped")
            #expect(try await a.notes() == ["mine": "m"])
            // Sent again under a new id, it is applied and the store keeps syncing.
            try await a.sync.recover()
            #expect(try await a.sync.sync().pushedOperations == 1)
            #expect(try await server.snapshot(space: space) == ["notes/mine": .payload(Data("m".utf8))])
        }
    }

    @Test func `a counter at the bigint maximum is an error for pushes and pulls, not a crash`() async throws {
        try await withTemporaryDirectory { directory in
            let space = TestPostgres.space("overflow")
            let server = try await TestPostgres.server()
            let a = try await Device("a", in: directory, space: space, server: server)
            try await a.put("first", "1")
            _ = try await a.sync.sync()
            try await tamper(
                "UPDATE recordkeeper_sync_spaces SET counter = 9223372036854775807 WHERE space = $1", [.text(space)])
            try await a.put("second", "2")
            let pushed = await #expect(throws: SyncError.self) { _ = try await a.sync.push() }
            #expect(pushed?.code == .serverFailure)
            #expect(pushed?.message.contains("maximum") == true, "\(String(describing: pushed))")
            #expect(try await a.pending() == 1)

            let b = try await Device("b", in: directory, space: space, server: server)
            let pulled = await #expect(throws: SyncError.self) { _ = try await b.sync.pull() }
            #expect(pulled?.code == .serverFailure)
            #expect(pulled?.message.contains("out of range") == true, "\(String(describing: pulled))")
            #expect(try await b.notes().isEmpty)
            #expect(try await b.store.syncStatus()?.cursor == .start)
        }
    }

    @Test func `a row with an empty key is named, skipped, and blocks no device`() async throws {
        try await withTemporaryDirectory { directory in
            let space = TestPostgres.space("malformed")
            let server = try await TestPostgres.server()
            let a = try await Device("a", in: directory, space: space, server: server)
            let b = try await Device("b", in: directory, space: space, server: server)
            try await a.put("bad", "b")
            try await a.put("good", "g")
            _ = try await a.sync.sync()
            try await tamper(
                "UPDATE recordkeeper_sync_records SET key = '' WHERE space = $1 AND key = 'bad'", [.text(space)])

            let error = await #expect(throws: SyncError.self) { _ = try await b.sync.sync() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains(#""notes"/"""#) == true, "\(String(describing: error))")
            #expect(error?.message.contains("must not be empty") == true)
            #expect(try await b.notes() == ["good": "g"], "every other record came down")
            // Neither device is blocked: b's next sync is clean, a pushes and pulls.
            try await b.put("from b", "x")
            #expect(try await b.sync.sync().pushedOperations == 1)
            try await a.put("more", "m")
            #expect(try await a.sync.sync().pushedOperations == 1)
            #expect(try await a.notes() == ["bad": "b", "good": "g", "more": "m", "from b": "x"], "a keeps its own")
        }
    }
}

/// A server that can refuse the next push before it reaches PostgreSQL, keeping what it was
/// asked to send.
actor RecordingServer: RecordSyncServer {
    let inner: any RecordSyncServer
    private var refusing = false
    private(set) var refused: [SyncOperation] = []

    init(_ inner: any RecordSyncServer) {
        self.inner = inner
    }

    func refuseNextPush() { refusing = true }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        if refusing {
            refusing = false
            refused += operations
            throw SyncError(.unreachable, "test: refused before sending")
        }
        return try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await inner.pull(space: space, after: cursor, limit: limit)
    }
}
