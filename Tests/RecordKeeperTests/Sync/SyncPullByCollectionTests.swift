import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Pulls by collection on the device: a device pulls only the collections it syncs, a
/// collection started later still brings its older records down (also when another client of
/// the store starts it during a pull), a server that cannot filter gets the same answer
/// through the protocol's default, and one that ignores the filter is refused.
@Suite struct SyncPullByCollectionTests {
    /// Device 0 syncs "notes" and "tags" and writes 10 notes and 90 tags, one transaction each.
    private func withBusySpace(
        _ kind: StoreKind,
        _ body: (_ stores: [RecordStore], _ server: ScriptedServer, _ device: RecordSync) async throws -> Void
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = ScriptedServer()
            let writer = RecordSync(store: stores[0], server: server)
            try await writer.start(space: "s", collections: ["notes", "tags"])
            for i in 0..<100 {
                try await stores[0].put(i % 10 == 0 ? "notes" : "tags", key: "k\(i)", data: Data("v\(i)"))
            }
            _ = try await writer.sync()
            try await body(stores, server, RecordSync(store: stores[1], server: server))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a device syncing one of two collections pulls only its changes`(kind: StoreKind) async throws {
        try await withBusySpace(kind) { stores, server, device in
            try await device.start(space: "s", collections: ["notes"])
            let pullsBefore = await server.pulledCollections.count
            let report = try await device.sync()
            #expect(report.pulledChanges == 10)
            #expect(report.cursor == SyncCursor(counter: 100), "the cursor is the space's: at its counter")
            #expect(await server.pulledFilters.last == .some(["notes"]))
            let pulled = await server.pulledCollections.dropFirst(pullsBefore)
            #expect(pulled.count == 10 && pulled.allSatisfy { $0 == "notes" }, "only the synced collection's changes came down")
            #expect(try await strings(stores[1], "notes").count == 10)
            #expect(try await stores[1].read("tags") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a collection started later brings down its records pushed long before the device's cursor`(
        kind: StoreKind
    ) async throws {
        try await withBusySpace(kind) { stores, server, device in
            try await device.start(space: "s", collections: ["notes"])
            _ = try await device.sync()
            // More notes after the tags: the device's cursor is far past every tag.
            for i in 100..<110 { try await stores[0].put("notes", key: "k\(i)", data: Data("v\(i)")) }
            _ = try await RecordSync(store: stores[0], server: server).sync()
            #expect(try await device.sync().cursor == SyncCursor(counter: 110))

            try await device.start(space: "s", collections: ["tags"])
            let report = try await device.sync()
            #expect(await server.pulledFilters.last == .some(["notes", "tags"]))
            #expect(try await strings(stores[1], "tags").count == 90)
            #expect(try await strings(stores[1], "tags")["k1"] == "v1", "the oldest tag came down")
            #expect(try await strings(stores[1], "notes").count == 20)
            #expect(report.cursor == SyncCursor(counter: 110))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a collection another client of the store starts during the first pull still comes down`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let writer = RecordSync(store: stores[1], server: inner)
            try await writer.start(space: "s", collections: ["a", "b"])
            try await stores[1].put("b", key: "old", data: Data("b"))
            try await stores[1].put("a", key: "x", data: Data("1"))
            _ = try await writer.sync()
            // The puller has never pulled: its cursor is at the start, and `start` of "b"
            // leaves it there; the page in flight was asked for "a" only.
            let server = PullHookServer(inner)
            let puller = RecordSync(store: stores[0], server: server)
            try await puller.start(space: "s", collections: ["a"])
            let other = RecordSync(store: stores[0], server: inner)
            await server.setHook { try await other.start(space: "s", collections: ["b"]) }
            _ = try await puller.pull()
            #expect(try await strings(stores[0], "a") == ["x": "1"])
            #expect(try await strings(stores[0], "b") == ["old": "b"])
            #expect(try await stores[0].syncStatus()?.cursor == SyncCursor(counter: 2))
        }
    }

    @Test func `a server that cannot filter gives the same pages through the protocol's default`() async throws {
        let inner = InMemorySyncServer()
        // 40 changes, one in eight in "tags"; pages of 3 leave many pages of other changes only.
        for i in 0..<40 {
            let collection = i % 8 == 0 ? "tags" : "notes"
            _ = try await inner.push(
                space: "s",
                operations: [
                    SyncOperation(
                        device: "d", sequence: Int64(i + 1),
                        changes: [SyncChange(collection: collection, key: "k\(i)", value: .payload(Data("v")), base: nil)])
                ])
        }
        let unfiltering = UnfilteringServer(inner: inner)
        for limit in [1, 3, 100] {
            var (cursor, keys, filteredKeys) = (SyncCursor.start, [String](), [String]())
            while true {
                let page = try await unfiltering.pull(space: "s", after: cursor, limit: limit, collections: ["tags"])
                try SyncAnswerCheck.page(page, after: cursor, space: "s", seen: 0, collections: ["tags"])
                #expect(page.changes.allSatisfy { $0.collection == "tags" })
                keys += page.changes.map(\.key)
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(cursor == SyncCursor(counter: 40), "a complete page ends at the space's counter")
            cursor = .start
            while true {
                let page = try await inner.pull(space: "s", after: cursor, limit: limit, collections: ["tags"])
                filteredKeys += page.changes.map(\.key)
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(keys == ["k0", "k8", "k16", "k24", "k32"])
            #expect(keys == filteredKeys, "the same changes as a server that filters")
        }
        let none = try await unfiltering.pull(space: "s", after: .start, limit: 7, collections: [])
        #expect(none == SyncPage(changes: [], cursor: SyncCursor(counter: 40), hasMore: false))
        let bad = await #expect(throws: SyncError.self) {
            try await unfiltering.pull(space: "s", after: .start, limit: 7, collections: ["tags", ""])
        }
        #expect(bad?.code == .invalidRequest)
    }

    @Test(arguments: StoreKind.allCases)
    func `a server that ignores the filter is refused and nothing of its page is applied`(kind: StoreKind) async throws {
        try await withBusySpace(kind) { stores, server, _ in
            let device = RecordSync(store: stores[1], server: UnfilteredPulls(inner: server))
            try await device.start(space: "s", collections: ["notes"])
            let error = await #expect(throws: SyncError.self) { try await device.sync() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("of a collection the pull did not ask for") == true, "\(error?.message ?? "")")
            #expect(try await stores[1].read("notes") == nil)
            #expect(try await stores[1].syncStatus()?.cursor == .start)
        }
    }
}

/// A server that implements only the pull of every collection: pulls by collection go through
/// the protocol's default.
struct UnfilteringServer: RecordSyncServer {
    let inner: any RecordSyncServer

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await inner.pull(space: space, after: cursor, limit: limit)
    }
}
