import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Devices across a compaction of the server (an in-memory server on a manual clock): a device
/// whose cursor is behind the horizon resyncs and loses nothing it had not pushed; an operation
/// whose answer was lost before its outcome was compacted is never applied twice.
@Suite struct SyncResyncTests {
    static let month: Duration = .seconds(30 * 86_400)

    @Test(arguments: StoreKind.allCases)
    func `a device behind the horizon resyncs, keeps and pushes its pending changes, and removes what was deleted meanwhile`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let clock = ManualClock()
            let server = InMemorySyncServer(now: { clock.now() })
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "alice", collections: ["notes"])
            try await b.start(space: "alice", collections: ["notes"])
            try await stores[0].write { tx in
                for n in 1...6 { try tx.put("notes", key: "r\(n)", data: Data("v1 \(n)")) }
            }
            _ = try await a.sync()
            _ = try await b.sync()

            // B goes offline and edits: r1 (nobody else touches it), r2 (A deletes it), a new n1.
            try await stores[1].put("notes", key: "r1", data: Data("b edit"))
            try await stores[1].put("notes", key: "r2", data: Data("b keeps"))
            try await stores[1].put("notes", key: "n1", data: Data("b new"))
            // A deletes r2, r3, r4 and edits r5.
            try await stores[0].write { tx in
                for key in ["r2", "r3", "r4"] { _ = try tx.delete("notes", key: key) }
                try tx.put("notes", key: "r5", data: Data("a edit"))
            }
            _ = try await a.sync()

            // Forty days on, the server forgets what is older than a month: B's cursor is behind.
            clock.advance(days: 40)
            let done = try await server.compact(space: "alice", olderThan: Self.month)
            #expect(done.deletedTombstones == 3)
            let report = try await b.sync()
            #expect(report.resynced)
            #expect(report.removedAsCompacted == 2, "r3 and r4; r2 had B's change")
            #expect(report.pushedOperations == 3)
            #expect(report.newConflicts.isEmpty)
            _ = try await a.sync()
            let expected = ["r1": "b edit", "r2": "b keeps", "r5": "a edit", "r6": "v1 6", "n1": "b new"]
            for store in stores {
                #expect(try await strings(store, "notes") == expected)
                #expect(try await pendingOperations(store).isEmpty)
            }
            // Synced again, nothing more moves, and B's cursor is ahead of the horizon.
            let quiet = try await b.sync()
            #expect(!quiet.resynced && quiet.pulledChanges == 0 && quiet.removedAsCompacted == 0)
            #expect(try await server.pull(space: "alice", after: .start, limit: 100).changes.count == 5, "no tombstone left")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an operation whose answer was lost before its outcome was compacted is never applied twice`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let clock = ManualClock()
            let inner = InMemorySyncServer(now: { clock.now() })
            let flaky = ScriptedServer(inner)
            let (a, b) = (RecordSync(store: stores[0], server: inner), RecordSync(store: stores[1], server: flaky))
            try await a.start(space: "alice", collections: ["notes"])
            try await b.start(space: "alice", collections: ["notes"])

            // B's push of x and y is applied, but its answer is lost: it stays pending.
            try await stores[1].write { tx in
                try tx.put("notes", key: "x", data: Data("b x"))
                try tx.put("notes", key: "y", data: Data("b y"))
            }
            await flaky.setLoseAnswers(true)
            await #expect(throws: SyncError.self) { try await b.push() }
            await flaky.setLoseAnswers(false)
            #expect(try await pendingOperations(stores[1]).count == 1)
            // A changes x meanwhile.
            _ = try await a.sync()
            try await stores[0].put("notes", key: "x", data: Data("a x"))
            _ = try await a.sync()
            let counter = try await inner.pull(space: "alice", after: .start, limit: 100).cursor

            clock.advance(days: 40)
            _ = try await inner.compact(space: "alice", olderThan: Self.month)
            let report = try await b.sync()
            // The re-delivery is answered from the records' current state: y is B's value (its
            // operation applied then), x became A's since: a reported conflict, both kept.
            #expect(try await inner.pull(space: "alice", after: .start, limit: 100).cursor == counter, "nothing applied again")
            #expect(report.newConflicts.map(\.key) == ["x"])
            let conflict = try #require(try await stores[1].syncConflicts().first)
            #expect(conflict.local == Data("b x") && conflict.server == Data("a x"))
            #expect(try await strings(stores[1], "notes") == ["x": "a x", "y": "b y"])
            #expect(try await pendingOperations(stores[1]).isEmpty)
            // y is settled at its server version: B's next edit of it applies, no conflict.
            try await stores[1].put("notes", key: "y", data: Data("b y2"))
            #expect(try await b.sync().newConflicts.isEmpty)
            _ = try await a.sync()
            #expect(try await strings(stores[0], "notes") == ["x": "a x", "y": "b y2"])
        }
    }
}
