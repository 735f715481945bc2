import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// Issue 26's measure of compaction against a real PostgreSQL: 1,000 records edited 100 times
/// each and half of them deleted leave, once compacted, the live records plus what the horizon's
/// window holds; a device offline across the compaction resyncs with its pending edits kept and
/// pushed; a re-delivery of a compacted operation changes nothing. Ages run on a manual clock.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct SyncCompactionBoundTests {
    /// The space's rows in each server table.
    struct Rows: Equatable, CustomStringConvertible {
        var records = 0, tombstones = 0, operations = 0, devices = 0, cursors = 0
        var description: String {
            "records \(records) (tombstones \(tombstones)), operations \(operations), devices \(devices), cursor marks \(cursors)"
        }
    }

    static func rows(_ space: String, _ connection: PostgresConnection) async throws -> Rows {
        let result = try await connection.transaction { connection in
            try connection.execute(
                """
                SELECT (SELECT count(*) FROM recordkeeper_sync_records WHERE space = $1),
                    (SELECT count(*) FROM recordkeeper_sync_records WHERE space = $1 AND deleted),
                    (SELECT count(*) FROM recordkeeper_sync_operations WHERE space = $1),
                    (SELECT count(*) FROM recordkeeper_sync_devices WHERE space = $1),
                    (SELECT count(*) FROM recordkeeper_sync_cursors WHERE space = $1)
                """, [.text(space)])
        }
        return Rows(
            records: Int(try result.int64(0, 0)), tombstones: Int(try result.int64(0, 1)),
            operations: Int(try result.int64(0, 2)), devices: Int(try result.int64(0, 3)), cursors: Int(try result.int64(0, 4)))
    }

    /// The writer's side: one operation per change, pushed 1,000 at a time, each based on the
    /// record's last version.
    final class Writer: Sendable {
        let server: PostgresSyncServer
        let space: String
        private let state = Protected((sequence: Int64(0), versions: [String: Int64]()))

        init(_ server: PostgresSyncServer, space: String) {
            self.server = server
            self.space = space
        }

        func write(_ changes: [(key: String, value: SyncValue)]) async throws {
            for start in stride(from: 0, to: changes.count, by: 1000) {
                let chunk = changes[start..<min(start + 1000, changes.count)]
                let operations = state.withLock { state in
                    chunk.map { key, value in
                        state.sequence += 1
                        return SyncOperation(
                            device: "writer", sequence: state.sequence,
                            changes: [SyncChange(
                                collection: "notes", key: key, value: value,
                                base: state.versions[key].map(SyncServerVersion.init))])
                    }
                }
                let outcomes = try await server.push(space: space, operations: operations)
                try state.withLock { state in
                    for (operation, outcome) in zip(operations, outcomes) {
                        let version = try #require(outcome.result.appliedVersion, "\(outcome)")
                        state.versions[operation.changes[0].key] = version.rawValue
                    }
                }
            }
        }
    }

    @Test func `a thousand records edited a hundred times and half deleted compact to the live records plus the window`()
        async throws
    {
        let space = TestPostgres.space("bound")
        let clock = ManualClock()
        let server = try await TestPostgres.server(hooks: .init(now: { clock.now() }))
        let monitor = try await TestPostgres.connection()
        let writer = Writer(server, space: space)
        let keys = (0..<1000).map { "r" + String(10_000 + $0).dropFirst() }
        func round(_ round: Int, _ keys: some Sequence<String>) -> [(key: String, value: SyncValue)] {
            keys.map { ($0, SyncValue.text("\($0) edit \(round)")) }
        }

        // Day 0: r0900...r0999 get all their 100 edits, the others 50.
        for n in 1...100 { try await writer.write(round(n, n <= 50 ? keys[...] : keys[900...])) }
        try await withTemporaryDirectory { directory in
            let store = StoreKind.onDisk.makeStore(at: directory.appendingPathComponent("offline.sqlite"))
            let flaky = AnswerLosingServer(server)
            let device = RecordSync(store: store, server: flaky)
            try await device.start(space: space, collections: ["notes"])
            #expect(try await device.sync().pulledChanges == 1000)
            // Its push of "lost" is applied, but the answer never comes: it stays pending.
            try await store.put("notes", key: "lost", data: Data("sent"))
            await flaky.setLoseAnswers(true)
            await #expect(throws: SyncError.self) { try await device.push() }
            await flaky.setLoseAnswers(false)

            // Day 1: the other 50 edits of r0000...r0899, then r0000...r0499 are deleted. The
            // device is offline: it edits r0900...r0909 (untouched since it pulled) and
            // r0490...r0499 (deleted since), and writes a new record.
            clock.advance(days: 1)
            for n in 51...100 { try await writer.write(round(n, keys[..<900])) }
            try await writer.write(keys[..<500].map { ($0, .tombstone) })
            for key in keys[900..<910] + keys[490..<500] {
                try await store.put("notes", key: key, data: Data("\(key) offline".utf8))
            }
            try await store.put("notes", key: "offline-new", data: Data("new"))

            // Day 35: 100 new records, within the window of a compaction on day 40.
            clock.advance(days: 34)
            try await writer.write((0..<100).map { ("late\($0)", .text("late")) })
            clock.advance(days: 5)

            let before = try await Self.rows(space, monitor)
            let done = try await server.compact(space: space, olderThan: .seconds(30 * 86_400))
            let after = try await Self.rows(space, monitor)
            let live = 500 + 100 + 1  // r0500...r0999, the 100 late ones, and the device's "lost"
            print("compaction of 1,000 records × 100 edits, half deleted, 100 records written within the window:")
            print("  before: \(before)")
            print("  after:  \(after); horizon \(done.horizon), deleted \(done.deletedTombstones) tombstones and \(done.deletedOperations) outcomes")
            print("  bound:  \(live) live records + 0 tombstones and 100 operations within the window")
            #expect(before.records == 1101 && before.tombstones == 500 && before.operations == 100_000 + 500 + 100 + 1)
            #expect(after.records == live && after.tombstones == 0)
            #expect(after.operations == 100, "only the operations received within the window")
            #expect(done.deletedTombstones == 500 && done.deletedOperations == 100_501)

            // A compacted operation delivered again changes nothing.
            let head = try await server.pullAll(space: space).cursor
            let snapshot = try await server.snapshot(space: space)
            let replay = SyncOperation(
                device: "writer", sequence: 1, changes: [put("notes", keys[0], "edit 1 again", base: nil)])
            let answer = try #require(try await server.push(space: space, operations: [replay]).first)
            #expect(answer.isRedelivery && answer.result == .compacted([SyncConflict(
                collection: "notes", key: keys[0], base: nil, server: nil)]))
            #expect(try await server.pullAll(space: space).cursor == head)
            #expect(try await server.snapshot(space: space) == snapshot)

            // The device comes back: its lost operation is answered as compacted (settled: the
            // server holds its value), its edits are pushed, and it resyncs, removing what was
            // deleted meanwhile except what it had changed.
            let report = try await device.sync()
            #expect(report.resynced)
            #expect(report.newConflicts.isEmpty)
            #expect(report.removedAsCompacted == 490)
            #expect(try await pendingOperations(store) == 0)
            let server = try await server.snapshot(space: space)
            #expect(server.count == live + 10 + 1, "the 10 deleted records it edited came back, with its new one")
            var local: [String: SyncValue] = [:]
            for (key, data) in try await store.read("notes") ?? [:] { local["notes/\(key)"] = .payload(data) }
            #expect(local == server)
            #expect(local["notes/r0905"] == .text("r0905 offline") && local["notes/r0495"] == .text("r0495 offline"))
            #expect(local["notes/lost"] == .text("sent") && local["notes/offline-new"] == .text("new"))
        }
    }
}

/// The number of operations pending in `store`.
private func pendingOperations(_ store: RecordStore) async throws -> Int {
    try await store.syncStatus()?.pendingOperations ?? 0
}

/// A server whose push answers can be lost (the push applied, the answer never arriving).
private actor AnswerLosingServer: RecordSyncServer {
    let inner: any RecordSyncServer
    private var losing = false

    init(_ inner: any RecordSyncServer) { self.inner = inner }

    func setLoseAnswers(_ value: Bool) { losing = value }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        let outcomes = try await inner.push(space: space, operations: operations)
        if losing { throw SyncError(.unreachable, "test: the connection broke before the answer arrived") }
        return outcomes
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await inner.pull(space: space, after: cursor, limit: limit)
    }
}
