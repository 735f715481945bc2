import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// Compaction beside live traffic against a real PostgreSQL: a deletion batch held open inside
/// its transaction by a test hook (no sleeps) while pushes and pulls of the same space go on.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct PostgresCompactionConcurrencyTests {
    @Test func `pushes and pulls of a space go on while a compaction batch is open, and a record written again is kept`()
        async throws
    {
        let space = TestPostgres.space("compact-live")
        let clock = ManualClock()
        let gate = BlockingGate()
        let batches = Counter()
        let compactor = try await TestPostgres.server(
            hooks: .init(
                inCompactionBatch: { _ in if batches.increment() == 1 { gate.arriveAndWait() } },
                now: { clock.now() }))
        let live = try await TestPostgres.server(hooks: .init(now: { clock.now() }))
        let rewriter = try await TestPostgres.server(hooks: .init(now: { clock.now() }))
        let monitor = try await TestPostgres.connection()

        // 30 records, 20 of them deleted one by one (tombstones at versions 2...21).
        let keys = (0..<30).map { "k\($0 < 10 ? "0" : "")\($0)" }
        _ = try await live.push(space: space, operations: [SyncOperation(
            device: "setup", sequence: 1, changes: keys.map { put("notes", $0, "v", base: nil) })])
        _ = try await live.push(space: space, operations: keys.prefix(20).enumerated().map { index, key in
            operation("setup", Int64(index + 2), delete("notes", key, base: 1))
        })
        let cursor = try await live.pullAll(space: space).cursor
        #expect(cursor == SyncCursor(counter: 21))

        // Forty days on, the compaction deletes 5 tombstones (k00...k04) and stops before COMMIT.
        clock.advance(days: 40)
        let compaction = Task { try await compactor.compact(space: space, olderThan: .seconds(30 * 86_400), batch: 5) }
        await gate.arrival()

        // Meanwhile: a push of other records and a pull of the space answer at once.
        let pushed = try await live.push(space: space, operations: [operation("phone", 1, put("notes", "new", "N", base: nil))])
        #expect(pushed.first?.result == .applied(SyncServerVersion(22)))
        let during = try await live.pull(space: space, after: cursor, limit: 100)
        #expect(during.changes.map(\.key) == ["new"])
        #expect(try await live.pull(space: space, after: .start, limit: 100).changes.count == 31, "the open batch is not visible")

        // A push writing k00 again (based on its tombstone) waits for that batch's row only.
        let pid = await rewriter.connection.backendProcessID
        let rewrite = Task {
            try await rewriter.push(space: space, operations: [operation("phone", 2, put("notes", "k00", "back", base: 2))])
        }
        try await TestPostgres.waitUntil(backend: pid, waitsForLock: true, monitor: monitor)
        gate.open()
        let done = try await compaction.value
        let rewritten = try await rewrite.value

        // The compaction deleted every tombstone; the push applied k00 once the batch committed
        // (its row was gone: the push inserted it), and nothing else was lost.
        #expect(done.horizon == 21)
        #expect(done.deletedTombstones == 20)
        #expect(rewritten.first?.result == .applied(SyncServerVersion(23)))
        let after = try await live.snapshot(space: space)
        #expect(after.count == 12)
        #expect(after["notes/k00"] == .text("back") && after["notes/new"] == .text("N"))
        #expect(Set(after.keys) == Set(keys.suffix(10).map { "notes/\($0)" } + ["notes/k00", "notes/new"]))
        // The cursor handed out before the window is still complete, and the counter never skipped.
        #expect(try await live.pullAll(space: space, after: cursor).changes.map(\.key) == ["new", "k00"])
    }

    @Test func `a space whose compaction fails does not stop compactAll: the others are compacted and it is named`()
        async throws
    {
        struct Refused: Error {}
        try await TestPostgres.withPrivateConnections { connect, _ in
            let clock = ManualClock()
            let connection = try await connect()
            try await PostgresSyncSchema.migrate(connection)
            let server = try await PostgresSyncServer(
                connections: [connection],
                hooks: .init(inCompactionBatch: { space in if space == "b" { throw Refused() } }, now: { clock.now() }),
                timeout: TestPostgres.generousTimeout)
            for space in ["a", "b", "c"] {
                let write = operation("phone", 1, after: nil, put("notes", "k", "v", base: nil))
                _ = try await server.push(space: space, operations: [write, operation("phone", 2, after: write, delete("notes", "k", base: 1))])
            }
            clock.advance(days: 40)
            let error = await #expect(throws: SyncCompactionIncomplete.self) {
                _ = try await server.compactAll(olderThan: .seconds(30 * 86_400))
            }
            #expect(error?.compacted.map(\.space) == ["a", "c"], "the spaces after the failing one were compacted too")
            #expect(error?.compacted.map(\.deletedTombstones) == [1, 1])
            #expect(error?.failures.map(\.space) == ["b"])
            #expect(error?.description.contains("1 space(s) could not be compacted (2 were)") == true)
            // An age or a batch no space could be compacted with fails once, nothing tried.
            let tooYoung = await #expect(throws: SyncError.self) { _ = try await server.compactAll(olderThan: .seconds(60)) }
            #expect(tooYoung?.code == .invalidRequest)
            await #expect(throws: SyncError.self) { _ = try await server.compactAll(olderThan: .seconds(30 * 86_400), batch: 0) }
        }
    }

}
