import TestHelpers
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
    func `a record changed in every batch of one push builds on the device's own writes, without conflicts`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = ScriptedServer()
            let sync = RecordSync(store: stores[0], server: server)
            try await sync.start(space: "s", collections: ["notes"])
            // 450 transactions of one key: three requests, each read while the previous one's
            // outcomes may still be being applied (its base can predate their acknowledgement).
            for n in 0..<450 { try await stores[0].put("notes", key: "a", data: Data("\(n)")) }
            let report = try await sync.push()
            #expect(await server.pushes == 3)
            #expect(report.pushedOperations == 450)
            #expect(report.newConflicts.isEmpty)
            #expect(try await stores[0].syncConflicts().isEmpty)
            #expect(try await stores[0].syncStatus()?.pendingOperations == 0)
            let other = RecordSync(store: stores[1], server: server)
            try await other.start(space: "s", collections: ["notes"])
            _ = try await other.sync()
            #expect(try await strings(stores[1], "notes") == ["a": "449"])
            // The next change is based on the last acknowledged version: no conflict either.
            try await stores[0].put("notes", key: "a", data: Data("last"))
            #expect(try await sync.sync().newConflicts.isEmpty)
            _ = try await other.sync()
            #expect(try await strings(stores[1], "notes") == ["a": "last"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflict in the first batch of a push is applied before the next batch is read`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = ScriptedServer()
            let a = RecordSync(store: stores[0], server: server)
            let b = RecordSync(store: stores[1], server: server)
            try await a.start(space: "s", collections: ["notes"])
            try await b.start(space: "s", collections: ["notes"])
            try await stores[1].put("notes", key: "shared", data: Data("from b"))
            _ = try await b.push()
            // a's first operation conflicts; 250 more follow it, and one changes the key again.
            try await stores[0].put("notes", key: "shared", data: Data("from a"))
            for n in 0..<249 { try await stores[0].put("notes", key: "k\(n)", data: Data("\(n)")) }
            try await stores[0].put("notes", key: "shared", data: Data("from a, later"))
            let report = try await a.push()
            #expect(report.newConflicts.map(\.key) == ["shared"])
            #expect(report.newConflicts.first?.local == Data("from a, later"), "the conflict holds the latest local value")
            #expect(try await stores[0].syncStatus()?.pendingOperations == 0)
            _ = try await b.pull()
            let values = try await strings(stores[1], "notes")
            #expect(values.count == 250)
            #expect(values["shared"] == "from b", "the later change was superseded by the conflict, not pushed")
            #expect(values["k248"] == "248")
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
    func `an operation refused because another store wrote as this device stays pending and says to recover`(
        kind: StoreKind
    ) async throws {
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
            #expect(error?.code == .forkedDevice)
            #expect(error?.message.contains("another store synced as this device") == true)
            #expect(error?.message.contains("recover") == true)
            #expect(try await store.syncStatus()?.pendingOperations == 1)
            #expect(try await strings(store, "notes") == ["a": "1"])
            // Recovering makes it a new device; the operation goes and nothing is lost.
            let recovery = try await sync.recover()
            #expect(recovery.previousDevice == device)
            #expect(recovery.reissuedOperations == 1)
            #expect(try await sync.push().pushedOperations == 1)
            #expect(try await store.syncStatus()?.pendingOperations == 0)
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
