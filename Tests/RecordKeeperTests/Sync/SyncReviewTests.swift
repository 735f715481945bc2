import TestHelpers
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

    @Test(arguments: StoreKind.allCases)
    func `a page made stale by what another client of the store learned meanwhile is no server gone back`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let writer = RecordSync(store: stores[1], server: inner)
            try await writer.start(space: "s", collections: ["notes"])
            try await stores[1].put("notes", key: "r", data: Data("1"))
            _ = try await writer.sync()
            let server = PullHookServer(inner)
            let puller = RecordSync(store: stores[0], server: server)
            try await puller.start(space: "s", collections: ["notes"])
            _ = try await puller.sync()
            try await stores[1].put("notes", key: "r", data: Data("2"))
            _ = try await writer.sync()
            // The page holding r at version 2 is answered after another client of the store
            // pulled r at version 3.
            let other = RecordSync(store: stores[0], server: inner)
            await server.setHook {
                try await stores[1].put("notes", key: "r", data: Data("3"))
                _ = try await writer.sync()
                _ = try await other.pull()
            }
            let report = try await puller.pull()
            #expect(report.pulledChanges == 0, "the stale change was skipped")
            #expect(try await strings(stores[0], "notes") == ["r": "3"])
            _ = try await puller.sync()
            #expect(try await strings(stores[0], "notes") == ["r": "3"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `collections added while a pull runs elsewhere still come down`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let writer = RecordSync(store: stores[1], server: inner)
            try await writer.start(space: "s", collections: ["a", "b"])
            try await stores[1].put("b", key: "old", data: Data("b"))
            try await stores[1].put("a", key: "x", data: Data("1"))
            _ = try await writer.sync()
            let server = PullHookServer(inner)
            let puller = RecordSync(store: stores[0], server: server)
            try await puller.start(space: "s", collections: ["a"])
            _ = try await puller.sync()
            try await stores[1].put("a", key: "y", data: Data("2"))
            _ = try await writer.sync()
            // While this pull waits for its page, another client of the store adds "b" (which
            // resets the cursor so that b's older records come down).
            let other = RecordSync(store: stores[0], server: inner)
            await server.setHook { try await other.start(space: "s", collections: ["b"]) }
            _ = try await puller.pull()
            _ = try await puller.sync()
            #expect(try await strings(stores[0], "a") == ["x": "1", "y": "2"])
            #expect(try await strings(stores[0], "b") == ["old": "b"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a push with an unknown stored policy fails naming it instead of sending report`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let server = ScriptedServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"], policy: .lastWriterWins)
            try await store.put("notes", key: "a", data: Data("1"))
            // As a later version of the library might store it.
            try await store.performWrite(.syncStart, collection: nil) { context in
                try context.engine.connection.withStatement("UPDATE sync_collections SET policy = 'merge'") { try $0.run() }
            }
            let error = await #expect(throws: RecordStoreError.self) { try await sync.push() }
            #expect(error?.code == .malformedRecord)
            #expect(error?.collection == "notes")
            #expect(error?.key == "a")
            #expect(await server.pushes == 0, "nothing was sent under a policy the store does not say")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a name the server cannot store is refused locally instead of blocking every later push`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("old", key: "x\u{0}y", data: Data("1"))
            let server = ScriptedServer()
            let sync = RecordSync(store: store, server: server)
            let refused = await #expect(throws: (any Error).self) { try await sync.start(space: "s", collections: ["old"]) }
            #expect((refused as? RecordStoreError)?.key == "x\u{0}y")
            #expect(try await store.syncStatus() == nil, "nothing of the start was written")
            let badName = await #expect(throws: SyncError.self) {
                try await sync.start(space: "s", collections: ["no\u{0}tes"])
            }
            #expect(badName?.code == .invalidRequest)
            #expect(try await store.syncStatus() == nil)

            try await sync.start(space: "s", collections: ["notes"])
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("notes", key: "a\u{0}b", data: Data("never"))
            }
            #expect(error?.code == .invalidKey)
            #expect(error?.collection == "notes")
            #expect(try await store.read("notes") == nil, "nothing of the write was written")
            try await store.put("notes", key: "fine", data: Data("2"))
            let report = try await sync.sync()
            #expect(report.pushedChanges == 1)
            #expect(try await store.syncStatus()?.pendingOperations == 0)
        }
    }
}

/// A server that runs a hook once, after computing a pull's page and before answering it.
actor PullHookServer: RecordSyncServer {
    let inner: any RecordSyncServer
    private var hook: (@Sendable () async throws -> Void)?

    init(_ inner: any RecordSyncServer) {
        self.inner = inner
    }

    func setHook(_ hook: @escaping @Sendable () async throws -> Void) { self.hook = hook }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        let page = try await inner.pull(space: space, after: cursor, limit: limit, collections: collections)
        if let hook {
            self.hook = nil
            try await hook()
        }
        return page
    }
}
