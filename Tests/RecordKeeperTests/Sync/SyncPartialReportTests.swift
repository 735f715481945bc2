import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// A sync that fails after part of its work carries what it did in `SyncError.partialReport`:
/// a conflict its push recorded is in the store, and the caller hears of it even though the
/// pull after it failed.
@Suite struct SyncPartialReportTests {
    @Test(arguments: StoreKind.allCases)
    func `a conflict recorded by the push is named by the error when the pull after it fails`(_ kind: StoreKind)
        async throws
    {
        try await withDevices(kind, count: 2) { stores in
            let server = ScriptedServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "alice", collections: ["notes"])
            try await b.start(space: "alice", collections: ["notes"])
            try await stores[0].put("notes", key: "today", data: Data("first".utf8))
            _ = try await a.sync()
            _ = try await b.sync()
            try await stores[0].put("notes", key: "today", data: Data("from a".utf8))
            try await stores[1].put("notes", key: "today", data: Data("from b".utf8))
            _ = try await a.sync()

            await server.setFailPulls(true)
            let error = await #expect(throws: SyncError.self) { try await b.sync() }
            #expect(error?.code == .unreachable)
            let partial = try #require(error?.partialReport, "the push's work is reported")
            #expect(partial.pushedOperations == 1)
            #expect(partial.newConflicts.map(\.key) == ["today"])
            #expect(try await stores[1].syncConflicts().map(\.key) == ["today"], "and kept in the store")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a sync that fails before doing anything carries no partial report`(_ kind: StoreKind) async throws {
        try await withDevices(kind, count: 1) { stores in
            let server = ScriptedServer()
            let sync = RecordSync(store: stores[0], server: server)
            try await sync.start(space: "alice", collections: ["notes"])
            try await stores[0].put("notes", key: "today", data: Data("milk".utf8))
            await server.setUnreachable(true)
            let error = await #expect(throws: SyncError.self) { try await sync.sync() }
            #expect(error?.code == .unreachable)
            #expect(error?.partialReport == nil)
            #expect(try await stores[0].syncStatus()?.pendingOperations == 1)
        }
    }
}
