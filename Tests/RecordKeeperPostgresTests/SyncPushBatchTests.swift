import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// Pushes of many operations, whose writes the PostgreSQL server makes in one set-based
/// statement: the rules hold between the operations of one push exactly as between pushes
/// (against every server implementation: the same requests get the same answers).
@Suite struct SyncPushBatchTests {
    @Test(arguments: ServerKind.allCases)
    func `a later operation of one push conflicts with what an earlier one of another device wrote`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space("batch")
        _ = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "A1", base: nil))])

        let phone = operation("phone", 2, put("notes", "a", "A2", base: 1), put("notes", "new", "N", base: nil))
        // The laptop saw version 1 of "a" too, and creates "b" in the same operation.
        let laptop = operation("laptop", 1, put("notes", "a", "L", base: 1), put("notes", "b", "B", base: nil))
        // Then builds on what the phone's operation of this push wrote.
        let laptopAgain = operation("laptop", 2, put("notes", "a", "L2", base: 2))
        let outcomes = try await server.push(space: space, operations: [phone, laptop, laptopAgain])

        #expect(outcomes[0].result == .applied(SyncServerVersion(2)))
        #expect(
            outcomes[1].result
                == .conflict([
                    SyncConflict(
                        collection: "notes", key: "a", base: SyncServerVersion(1),
                        server: SyncRecordState(value: .text("A2"), version: SyncServerVersion(2)))
                ]))
        #expect(outcomes[2].result == .applied(SyncServerVersion(3)))
        // Whole or nothing: the conflicting operation's new record "b" was not created.
        #expect(
            try await server.snapshot(space: space)
                == ["notes/a": .text("L2"), "notes/new": .text("N")])
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 3))

        // Each outcome, the conflict too, was stored: the same push again changes nothing.
        let again = try await server.push(space: space, operations: [phone, laptop, laptopAgain])
        #expect(again.map(\.result) == outcomes.map(\.result))
        #expect(again.allSatisfy { $0.isRedelivery })
        #expect(try await server.pullAll(space: space).cursor == SyncCursor(counter: 3))
    }

    @Test(arguments: ServerKind.allCases)
    func `a push mixing re-deliveries, out-of-order and new operations writes only the new ones`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space("mixed")
        let first = operation("phone", 1, put("notes", "a", "A1", base: nil))
        let second = operation("phone", 5, put("notes", "b", "B1", base: nil))
        _ = try await server.push(space: space, operations: [first, second])

        let fresh = operation("phone", 6, put("notes", "a", "A2", base: 1))
        let stale = operation("phone", 3, put("notes", "c", "C", base: nil))  // below 5: refused
        let other = operation("laptop", 1, delete("notes", "b", base: 2))
        let outcomes = try await server.push(space: space, operations: [second, fresh, first, stale, other, fresh])
        #expect(outcomes.map(\.isRedelivery) == [true, false, true, false, false, true])
        #expect(outcomes[0].result == .applied(SyncServerVersion(2)))
        #expect(outcomes[1].result == .applied(SyncServerVersion(3)))
        #expect(outcomes[2].result == .applied(SyncServerVersion(1)))
        #expect(outcomes[3].result == .outOfOrder(lastSequence: 6))
        #expect(outcomes[4].result == .applied(SyncServerVersion(4)))
        #expect(outcomes[5].result == outcomes[1].result)

        let pulled = try await server.pullAll(space: space)
        #expect(pulled.cursor == SyncCursor(counter: 4))
        #expect(
            pulled.changes == [
                SyncPulledChange(collection: "notes", key: "a", value: .text("A2"), version: SyncServerVersion(3)),
                SyncPulledChange(collection: "notes", key: "b", value: .tombstone, version: SyncServerVersion(4)),
            ])
        // The refused operation was not recorded: with a sequence above the device's last, it
        // applies later.
        let retried = SyncOperation(id: stale.id, device: "phone", sequence: 7, changes: stale.changes)
        #expect(try await server.push(space: space, operations: [retried]).first?.result == .applied(SyncServerVersion(5)))
    }

    @Test(arguments: ServerKind.allCases)
    func `one push creates, changes, deletes and recreates records and each gets its final value`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space("shapes")
        _ = try await server.push(
            space: space,
            operations: [
                operation("phone", 1, put("notes", "old", "O1", base: nil), put("notes", "gone", "G1", base: nil))
            ])
        let bytes = Data([0, 0xFF, 0x5C, 0x22, 0x7B, 0x2C])  // NUL, 0xFF, backslash, quote, {, ","
        let outcomes = try await server.push(
            space: space,
            operations: [
                // Creates "fresh" (and an empty payload), changes "old", deletes "gone".
                operation(
                    "phone", 2, put("notes", "fresh", "F1", base: nil), put("notes", "old", "O2", base: 1),
                    delete("notes", "gone", base: 1),
                    SyncChange(collection: "notes", key: "empty", value: .payload(Data()), base: nil)),
                // Changes what the previous operation created, and brings "gone" back.
                operation(
                    "phone", 3,
                    SyncChange(collection: "notes", key: "fresh", value: .payload(bytes), base: SyncServerVersion(2)),
                    put("notes", "gone", "G2", base: 2)),
                // Last writer wins over whatever base it names.
                operation(
                    "tablet", 1,
                    SyncChange(
                        collection: "notes", key: "old", value: .tombstone, base: nil, policy: .lastWriterWins)),
            ])
        let expected: [SyncResult] = [2, 3, 4].map { .applied(SyncServerVersion($0)) }
        #expect(outcomes.map(\.result) == expected)
        let changes = try await server.pullAll(space: space).changes
        #expect(
            changes == [
                SyncPulledChange(collection: "notes", key: "empty", value: .payload(Data()), version: SyncServerVersion(2)),
                SyncPulledChange(collection: "notes", key: "fresh", value: .payload(bytes), version: SyncServerVersion(3)),
                SyncPulledChange(collection: "notes", key: "gone", value: .text("G2"), version: SyncServerVersion(3)),
                SyncPulledChange(collection: "notes", key: "old", value: .tombstone, version: SyncServerVersion(4)),
            ])
        // The writer and base of the last write are kept for the own-write rule: the tablet
        // wrote "old" last, so the phone's change based on version 2 is a conflict now.
        let late = try await server.push(space: space, operations: [operation("phone", 4, put("notes", "old", "O3", base: 2))])
        #expect(late.first?.result.conflicts.first?.server == SyncRecordState(value: .tombstone, version: SyncServerVersion(4)))
    }
}
