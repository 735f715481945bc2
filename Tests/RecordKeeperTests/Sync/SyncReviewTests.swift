import RecordKeeperTestSupport
import Foundation
import Testing
@testable import RecordKeeper

/// Regressions found in review: redelivered outcomes, values kept aside, and capture corners.
@Suite struct SyncReviewTests {
    @Test(arguments: StoreKind.allCases)
    func `a redelivered conflict keeps a newer server value pulled meanwhile`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let server = ScriptedServer(inner)
            let a = RecordSync(store: stores[0], server: server)
            let b = RecordSync(store: stores[1], server: server)
            try await a.start(space: "s", collections: ["notes"])
            try await b.start(space: "s", collections: ["notes"])
            try await stores[0].put("notes", key: "r", data: Data("a0"))
            _ = try await a.sync()
            _ = try await b.sync()
            try await stores[1].put("notes", key: "r", data: Data("b1"))
            _ = try await b.sync()
            // A's edit conflicts with b1; the server records that outcome, but its answer is lost.
            try await stores[0].put("notes", key: "r", data: Data("a1"))
            await server.setLoseAnswers(true)
            await #expect(throws: SyncError.self) { try await a.push() }
            await server.setLoseAnswers(false)
            // B writes again; A pulls it while its edit is still pending (kept aside).
            try await stores[1].put("notes", key: "r", data: Data("b2"))
            _ = try await b.sync()
            _ = try await a.pull()
            #expect(try await strings(stores[0], "notes") == ["r": "a1"])
            // The redelivery answers with the conflict of the first time (server value b1).
            let report = try await a.sync()
            #expect(try await strings(stores[0], "notes") == ["r": "b2"], "the device converges on the server's value")
            let conflicts = try await stores[0].syncConflicts()
            #expect(conflicts.count == 1)
            #expect(conflicts.first?.local == Data("a1"))
            #expect(conflicts.first?.server == Data("b2"))
            #expect(report.newConflicts.first?.server == Data("b2"))
            let page = try await inner.pull(space: "s", after: .start, limit: 10)
            #expect(conflicts.first?.serverVersion == page.changes.first?.version)
        }
    }
}
