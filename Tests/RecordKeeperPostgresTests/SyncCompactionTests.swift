import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// Compaction with a horizon, against every server implementation: what is older than the age
/// and behind every cursor handed out within it is deleted; re-deliveries of compacted
/// operations are recognised by the device's sequence and change nothing; a cursor behind the
/// horizon is refused. Ages run on an injected clock.
@Suite struct SyncCompactionTests {
    static let month: Duration = .seconds(30 * 86_400)

    @Test(arguments: ServerKind.allCases)
    func `old tombstones and outcomes go, and a re-delivery of a compacted operation changes nothing`(
        kind: ServerKind
    ) async throws {
        let clock = ManualClock()
        guard let server = try await kind.make(clock: clock) else { return }
        let space = TestPostgres.space("compact")
        let write = operation("phone", 1, after: nil, put("notes", "a", "A1", base: nil), put("notes", "b", "B1", base: nil))
        let erase = operation("phone", 2, after: write, delete("notes", "a", base: 1))
        let argue = operation("tablet", 1, after: nil, put("notes", "b", "mine", base: nil))
        let outcomes = try await server.push(space: space, operations: [write, erase, argue])
        #expect(outcomes.map(\.result.appliedVersion) == [SyncServerVersion(1), SyncServerVersion(2), nil])
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 2))

        clock.advance(days: 40)
        let late = operation("laptop", 1, after: nil, put("notes", "c", "C1", base: nil))
        _ = try await server.push(space: space, operations: [late])
        let done = try await server.compact(space: space, olderThan: Self.month)
        #expect(done == SyncCompaction(space: space, horizon: 2, deletedTombstones: 1, deletedOperations: 3))
        #expect(try await server.snapshot(space: space) == ["notes/b": .text("B1"), "notes/c": .text("C1")])

        // Re-deliveries: the compacted ones get the records' current state, the kept one its
        // outcome; nothing is applied and the counter stays.
        let again = try await server.push(space: space, operations: [write, erase, argue, late])
        let b = SyncRecordState(value: .text("B1"), version: SyncServerVersion(1))
        #expect(again[0] == SyncOutcome(write, result: .compacted([
            SyncConflict(collection: "notes", key: "a", base: nil, server: nil),
            SyncConflict(collection: "notes", key: "b", base: nil, server: b),
        ]), isRedelivery: true))
        #expect(again[1].result == .compacted([SyncConflict(collection: "notes", key: "a", base: SyncServerVersion(1), server: nil)]))
        #expect(again[2].result == .compacted([SyncConflict(collection: "notes", key: "b", base: nil, server: b)]))
        #expect(again[3] == SyncOutcome(late, result: .applied(SyncServerVersion(3)), isRedelivery: true))
        #expect(again.map(\.isRedelivery) == [true, true, true, true])
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 3), "re-deliveries must not move the counter")
        #expect(try await server.snapshot(space: space) == ["notes/b": .text("B1"), "notes/c": .text("C1")])

        // The chains go on; a write based on the compacted tombstone's version applies, and so
        // does one based on the version before it (the record was deleted: nothing is lost).
        let rewrite = operation("phone", 3, after: erase, put("notes", "a", "A2", base: 2))
        let stale = operation("tablet", 2, after: argue, put("notes", "a", "T", base: 1))
        #expect(try await server.push(space: space, operations: [rewrite, stale]).map(\.result)
            == [.applied(SyncServerVersion(4)), .conflict([SyncConflict(
                collection: "notes", key: "a", base: SyncServerVersion(1),
                server: SyncRecordState(value: .text("A2"), version: SyncServerVersion(4)))])])
        let gone = operation("laptop", 2, after: late, put("notes", "x", "X", base: 2))
        #expect(try await server.push(space: space, operations: [gone]).first?.result == .applied(SyncServerVersion(5)))
    }

    @Test(arguments: ServerKind.allCases)
    func `a pull behind the horizon is refused, and a pull from the start names the horizon`(kind: ServerKind) async throws {
        let clock = ManualClock()
        guard let server = try await kind.make(clock: clock) else { return }
        let space = TestPostgres.space("behind")
        let first = operation("phone", 1, put("notes", "a", "A", base: nil))
        let second = operation("phone", 2, delete("notes", "a", base: 1))
        let third = operation("phone", 3, put("notes", "b", "B", base: nil))
        _ = try await server.push(space: space, operations: [first, second, third])
        clock.advance(days: 40)
        #expect(try await server.compact(space: space, olderThan: Self.month).horizon == 3)

        for cursor in [SyncCursor(counter: 2), SyncCursor(counter: 3, position: .init(collection: "notes", key: "a"))] {
            let error = await #expect(throws: SyncError.self) { try await server.pull(space: space, after: cursor, limit: 10) }
            #expect(error?.code == .behindHorizon)
        }
        let fresh = try await server.pull(space: space, after: .start, limit: 10)
        #expect(fresh == SyncPage(
            changes: [SyncPulledChange(collection: "notes", key: "b", value: .text("B"), version: SyncServerVersion(3))],
            cursor: SyncCursor(counter: 3), hasMore: false, horizon: 3))
        #expect(try await server.pull(space: space, after: SyncCursor(counter: 3), limit: 10).changes.isEmpty)
        let short = await #expect(throws: SyncError.self) { try await server.compact(space: space, olderThan: .seconds(60)) }
        #expect(short?.code == .invalidRequest)
    }

    @Test(arguments: ServerKind.allCases)
    func `a cursor handed out within the age holds the horizon back until it is older`(kind: ServerKind) async throws {
        let clock = ManualClock()
        guard let server = try await kind.make(clock: clock) else { return }
        let space = TestPostgres.space("held")
        _ = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "A", base: nil))])
        _ = try await server.push(space: space, operations: [operation("phone", 2, delete("notes", "a", base: 1))])
        _ = try await server.push(space: space, operations: [operation("phone", 3, put("notes", "b", "B", base: nil))])

        // Twenty days on, a device pulls one change: it holds cursor 2/notes/a (every change up
        // to 1 seen).
        clock.advance(days: 20)
        let held = try await server.pull(space: space, after: .start, limit: 1)
        #expect(held.cursor == SyncCursor(counter: 2, position: .init(collection: "notes", key: "a")))

        clock.advance(days: 20)
        let first = try await server.compact(space: space, olderThan: Self.month)
        #expect(first == SyncCompaction(space: space, horizon: 1, deletedTombstones: 0, deletedOperations: 1))
        let rest = try await server.pull(space: space, after: held.cursor, limit: 10)
        #expect(rest.changes.map(\.key) == ["b"])

        // Once that cursor was handed out longer ago than the age, the horizon passes it.
        clock.advance(days: 20)
        let second = try await server.compact(space: space, olderThan: Self.month)
        #expect(second == SyncCompaction(space: space, horizon: 3, deletedTombstones: 1, deletedOperations: 2))
        #expect(try await server.snapshot(space: space) == ["notes/b": .text("B")])
    }
}
