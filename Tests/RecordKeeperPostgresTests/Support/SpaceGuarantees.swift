import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// One pass over a space's guarantees through any server: exactly once (a re-delivery gets its
/// first outcome and no second effect), compare-and-set (a stale base is a conflict, nothing of
/// it applied), and paging that skips nothing. `device` names the writers, so several passes
/// can run at once in different spaces.
func checkSpaceGuarantees(of server: any RecordSyncServer, space: String, device: String = "phone") async throws {
    let first = operation(device, 1, put("notes", "a", "A1", base: nil))
    #expect(try await server.push(space: space, operations: [first]).map(\.result) == [.applied(SyncServerVersion(1))])
    let again = try await server.push(space: space, operations: [first])
    #expect(again == [SyncOutcome(first, result: .applied(SyncServerVersion(1)), isRedelivery: true)], "\(space)")

    let stale = operation(device + "-2", 1, put("notes", "a", "mine", base: nil))
    let outcome = try #require(try await server.push(space: space, operations: [stale]).first)
    #expect(outcome.result.conflicts.map(\.key) == ["a"], "\(space): \(outcome.result)")

    // 23 more records in 23 operations, pulled 5 at a time: every one, in order, once.
    var operations: [SyncOperation] = []
    for n in 0..<23 { operations.append(operation(device, Int64(2 + n), put("notes", "k\(n)", "v\(n)", base: nil))) }
    let outcomes = try await server.push(space: space, operations: operations)
    #expect(outcomes.map(\.result) == (2...24).map { .applied(SyncServerVersion(Int64($0))) }, "\(space)")
    let all = try await server.pullAll(space: space, limit: 5)
    #expect(all.changes.map(\.key) == ["a"] + (0..<23).map { "k\($0)" }, "\(space)")
    #expect(all.cursor == SyncCursor(counter: 24))
    #expect(try await server.snapshot(space: space)["notes/a"] == .text("A1"), "the conflicting write was not applied")
}
