import RecordKeeperTestSupport
import Foundation
import Testing
@testable import RecordKeeper

/// Push: batches, exactly-once with redelivery, offline queuing, refused out-of-order operations.
@Suite struct SyncPushTests {
    @Test(arguments: StoreKind.allCases)
    func `a push whose answer was lost is sent again with the same ids and changes nothing`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let server = ScriptedServer(inner)
            let sync = RecordSync(store: stores[0], server: server)
            try await sync.start(space: "s", collections: ["notes"])
            try await stores[0].put("notes", key: "a", data: Data("1"))
            try await stores[0].put("notes", key: "b", data: Data("2"))
            await server.setLoseAnswers(true)
            let error = await #expect(throws: SyncError.self) { try await sync.sync() }
            #expect(error?.code == .unreachable)
            #expect(try await pendingOperations(stores[0]).count == 2, "the outcome is unknown: still pending")
            #expect(try await strings(stores[0], "notes") == ["a": "1", "b": "2"])
            let applied = try await inner.pull(space: "s", after: .start, limit: 10)
            await server.setLoseAnswers(false)
            let report = try await sync.sync()
            #expect(report.pushedOperations == 2)
            let sent = await server.pushedOperations
            #expect(sent.count == 4)
            #expect(sent.prefix(2).map(\.id) == sent.suffix(2).map(\.id), "the same operation ids went again")
            #expect(try await inner.pull(space: "s", after: .start, limit: 10) == applied, "no second effect")
            #expect(report.cursor == SyncCursor(counter: 2))
            #expect(try await pendingOperations(stores[0]).isEmpty)
            // The device builds on its acknowledged writes without conflicts.
            try await stores[0].put("notes", key: "a", data: Data("3"))
            #expect(try await sync.sync().newConflicts.isEmpty)
            let other = RecordSync(store: stores[1], server: server)
            try await other.start(space: "s", collections: ["notes"])
            _ = try await other.sync()
            #expect(try await strings(stores[1], "notes") == ["a": "3", "b": "2"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `offline, reads and writes keep working and operations queue until the server is back`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let offline = RecordSync(store: store, server: OfflineServer())
            try await offline.start(space: "s", collections: ["notes"])
            try await store.put("notes", key: "a", data: Data("1"))
            let error = await #expect(throws: SyncError.self) { try await offline.sync() }
            #expect(error?.code == .unreachable)
            await #expect(throws: SyncError.self) { try await offline.pull() }
            try await store.put("notes", key: "b", data: Data("2"))
            #expect(try await strings(store, "notes") == ["a": "1", "b": "2"])
            #expect(try await store.syncStatus()?.pendingOperations == 2)
            #expect(try await store.syncStatus()?.cursor == .start)

            let server = InMemorySyncServer()
            let online = RecordSync(store: store, server: server)
            let report = try await online.sync()
            #expect(report.pushedOperations == 2)
            #expect(try await store.syncStatus()?.pendingOperations == 0)
            let page = try await server.pull(space: "s", after: .start, limit: 10)
            #expect(page.changes.map(\.key) == ["a", "b"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `many operations and records go in few round trips`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let server = ScriptedServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            // 10,000 records in one transaction: one operation, sent whole in one request.
            var values: [String: Data] = [:]
            for n in 0..<10_000 { values["bulk-\(n)"] = Data("\(n)") }
            try await store.replace("notes", values: values)
            // 450 small transactions: at most 200 operations per request.
            for n in 0..<450 { try await store.put("notes", key: "single-\(n)", data: Data("\(n)")) }
            let report = try await sync.push()
            #expect(report.pushedOperations == 451)
            #expect(report.pushedChanges == 10_450)
            #expect(await server.pushes == 4)
            #expect(try await store.syncStatus()?.pendingOperations == 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an operation the server refuses as out of order stays pending with a clear error`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let server = InMemorySyncServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            let device = try #require(try await store.syncStatus()?.device)
            // The server already has a later operation of this device (the store was restored
            // from an older copy, say).
            _ = try await server.push(
                space: "s",
                operations: [
                    SyncOperation(
                        device: device, sequence: 1_000,
                        changes: [SyncChange(collection: "notes", key: "x", value: .payload(Data("x")), base: nil)])
                ])
            try await store.put("notes", key: "a", data: Data("1"))
            let error = await #expect(throws: SyncError.self) { try await sync.push() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("out of order") == true)
            #expect(try await store.syncStatus()?.pendingOperations == 1)
            #expect(try await strings(store, "notes") == ["a": "1"])
        }
    }

    @Test func `two clients on one file pushing at once apply every operation once`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let server = ScriptedServer()
            let first = RecordSync(store: RecordStore(url: url), server: server)
            let second = RecordSync(store: RecordStore(url: url), server: server)
            try await first.start(space: "s", collections: ["notes"])
            for n in 0..<300 { try await first.store.put("notes", key: "k\(n % 50)", data: Data("\(n)")) }
            async let a = first.push()
            async let b = second.push()
            let reports = try await [a, b]
            #expect(reports.allSatisfy { $0.newConflicts.isEmpty }, "a device never conflicts with its own writes")
            #expect(try await first.store.syncStatus()?.pendingOperations == 0)
            let sent = await server.pushedOperations
            #expect(Set(sent.map(\.id)).count == 300, "every operation went, some maybe twice")
            let reader = RecordSync(store: RecordStore.inMemory(), server: server)
            try await reader.start(space: "s", collections: ["notes"])
            _ = try await reader.sync()
            #expect(try await reader.store.read("notes") == (try await first.store.read("notes")))
            #expect(try await first.pull().pulledChanges == 0, "no own write comes back")
        }
    }
}
