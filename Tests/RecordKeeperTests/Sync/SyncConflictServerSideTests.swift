import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// A conflict's server side follows the server while the device's later edit is pending: a
/// newer server value pulled meanwhile is what the conflict shows, and what keeping the
/// server's value writes.
@Suite struct SyncConflictServerSideTests {
    /// Record `r` written on both devices after they shared it: B's sync records a conflict
    /// whose server side is A's "a2".
    private func conflictOnB(_ stores: [RecordStore], _ a: RecordSync, _ b: RecordSync) async throws {
        try await stores[0].put("notes", key: "r", data: Data("a1".utf8))
        _ = try await a.sync()
        _ = try await b.sync()
        try await stores[0].put("notes", key: "r", data: Data("a2".utf8))
        try await stores[1].put("notes", key: "r", data: Data("b2".utf8))
        _ = try await a.sync()
        _ = try await b.sync()
        #expect(try await stores[1].syncConflicts().map(\.server) == [Data("a2".utf8)])
    }

    private func value(_ store: RecordStore) async throws -> String? {
        try await store.value("notes", key: "r").map { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: StoreKind.allCases)
    func `a newer server value pulled while an edit is pending is the conflict's server side`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
            try await conflictOnB(stores, a, b)

            // B edits again (pending); A writes once more; B pulls without pushing.
            try await stores[1].put("notes", key: "r", data: Data("b3".utf8))
            try await stores[0].put("notes", key: "r", data: Data("a3".utf8))
            _ = try await a.sync()
            _ = try await b.pull()
            #expect(try await stores[1].syncConflicts().map(\.server) == [Data("a3".utf8)])

            try await stores[1].resolveSyncConflict("notes", key: "r", keeping: .server)
            #expect(try await value(stores[1]) == "a3")
            _ = try await b.sync()
            _ = try await a.sync()
            #expect(try await value(stores[0]) == "a3")
            #expect(try await value(stores[1]) == "a3")
            // Both go on from the server's latest version: a later edit on B is no conflict.
            try await stores[1].put("notes", key: "r", data: Data("b4".utf8))
            let report = try await b.sync()
            #expect(report.newConflicts.isEmpty)
            _ = try await a.sync()
            #expect(try await value(stores[0]) == "b4")
        }
    }

    /// Holds the next push at a gate, once armed: the test acts while it is on its way.
    actor GatedPushServer: RecordSyncServer {
        let inner: InMemorySyncServer
        let arrived = Gate()
        let release = Gate()
        private var armed = false

        init(inner: InMemorySyncServer) { self.inner = inner }

        func arm() { armed = true }

        func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
            if armed {
                armed = false
                await arrived.open()
                await release.wait()
            }
            return try await inner.push(space: space, operations: operations)
        }

        func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
            try await inner.pull(space: space, after: cursor, limit: limit)
        }
    }

    /// B's conflict on "r" (``conflictOnB(_:_:_:)``); B's `edit` is on its way to the server
    /// when the person keeps the server's value; then both devices sync until they agree, and
    /// both must show the server's value "a2".
    private func keepServerWhileOnItsWay(
        _ kind: StoreKind, edit: (RecordStore) async throws -> Void, then check: ([RecordStore]) async throws -> Void = { _ in }
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let gated = GatedPushServer(inner: server)
            let a = RecordSync(store: stores[0], server: server)
            let b = RecordSync(store: stores[1], server: gated)
            for sync in [a, b] { try await sync.start(space: "s", collections: ["notes"]) }
            try await conflictOnB(stores, a, b)

            try await edit(stores[1])
            await gated.arm()
            let syncing = Task { try await b.sync() }
            await gated.arrived.wait()
            try await stores[1].resolveSyncConflict("notes", key: "r", keeping: .server)
            #expect(try await value(stores[1]) == "a2")
            await gated.release.open()
            _ = try await syncing.value
            #expect(try await stores[1].syncStatus()?.pendingOperations == 0, "the value kept went out in the same sync")

            // The server applied what was on its way as sent; the value kept goes out again.
            _ = try await b.sync()
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await value(stores[1]) == "a2")
            #expect(try await value(stores[0]) == "a2")
            #expect(try await stores[1].syncConflicts().isEmpty)
            try await check(stores)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keeping the server's value while the dropped edit is on its way is not undone by the next pull`(kind: StoreKind) async throws {
        try await keepServerWhileOnItsWay(kind, edit: { try await $0.put("notes", key: "r", data: Data("b3".utf8)) })
    }

    @Test(arguments: StoreKind.allCases)
    func `keeping the server's value while an operation carrying the edit and another change is on its way is not undone`(
        kind: StoreKind
    ) async throws {
        // One operation edits the conflicting record again and another record: keeping the
        // server's value drops the edit from it while it is on its way.
        try await keepServerWhileOnItsWay(kind, edit: {
            try await $0.apply("notes", changes: RecordChanges(upserts: ["r": Data("b3".utf8), "s": Data("s1".utf8)]))
        }, then: { stores throws in
            #expect(try await stores[0].value("notes", key: "s") == Data("s1".utf8))
            #expect(try await stores[1].syncStatus()?.pendingOperations == 0)
        })
    }
}
