import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Devices converge through one server: different keys, deletions, concurrent edits of one
/// key (reported or last-writer-wins), and resolving a conflict.
@Suite struct SyncConvergenceTests {
    @Test(arguments: StoreKind.allCases)
    func `two devices editing different keys converge to the union`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let syncs = stores.map { RecordSync(store: $0, server: server) }
            for sync in syncs { try await sync.start(space: "alice", collections: ["notes"]) }
            try await stores[0].put("notes", key: "a", data: Data("from 0"))
            try await stores[1].put("notes", key: "b", data: Data("from 1"))
            try await stores[1].put("other", key: "local", data: Data("not synced"))
            for sync in syncs { _ = try await sync.sync() }
            _ = try await syncs[0].sync()
            for store in stores {
                #expect(try await strings(store, "notes") == ["a": "from 0", "b": "from 1"])
            }
            #expect(try await stores[0].read("other") == nil, "an unsynced collection stays local")
            for store in stores { #expect(try await pendingOperations(store).isEmpty) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `three devices converge, and a device that was offline catches up`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 3) { stores in
            let server = InMemorySyncServer()
            let syncs = stores.map { RecordSync(store: $0, server: server) }
            for sync in syncs { try await sync.start(space: "team", collections: ["notes", "tags"]) }
            for (index, store) in stores.enumerated() {
                try await store.write { tx in
                    for n in 0..<5 { try tx.put("notes", key: "\(index)-\(n)", data: Data("note \(index) \(n)")) }
                    try tx.put("tags", key: "device-\(index)", data: Data("\(index)"))
                }
            }
            // Devices 0 and 1 sync twice; device 2 stays offline, then catches up.
            for _ in 0..<2 { for sync in syncs.prefix(2) { _ = try await sync.sync() } }
            let report = try await syncs[2].sync()
            #expect(report.pushedOperations == 1)
            #expect(report.pulledChanges == 12, "the other devices' 10 notes and 2 tags")
            for sync in syncs.prefix(2) { _ = try await sync.sync() }
            var expected: [String: String] = [:]
            for index in 0..<3 { for n in 0..<5 { expected["\(index)-\(n)"] = "note \(index) \(n)" } }
            for store in stores {
                #expect(try await strings(store, "notes") == expected)
                #expect(try await strings(store, "tags") == ["device-0": "0", "device-1": "1", "device-2": "2"])
                #expect(try await store.syncConflicts().isEmpty)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `concurrent edits of one key give one reported conflict keeping both values, and resolving converges`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "alice", collections: ["notes"])
            try await b.start(space: "alice", collections: ["notes"])
            try await stores[0].put("notes", key: "today", data: Data("first"))
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await strings(stores[1], "notes") == ["today": "first"])
            // Both edit the same record before hearing of the other's edit.
            try await stores[0].put("notes", key: "today", data: Data("from a"))
            try await stores[1].put("notes", key: "today", data: Data("from b"))
            try await stores[1].put("notes", key: "other", data: Data("b's other note"))
            let first = try await a.sync()
            let second = try await b.sync()
            #expect(first.newConflicts.isEmpty)
            #expect(second.newConflicts.count == 1)
            let conflicts = try await stores[1].syncConflicts()
            #expect(conflicts.count == 1)
            let conflict = try #require(conflicts.first)
            #expect(conflict.collection == "notes" && conflict.key == "today")
            #expect(conflict.local == Data("from b"), "the device's value is kept in the conflict")
            #expect(conflict.server == Data("from a"))
            #expect(try await strings(stores[1], "notes")["today"] == "from a", "the store holds the server's value")
            #expect(try await stores[0].syncConflicts().isEmpty)
            // The conflicting operation's other change was sent again and arrived.
            _ = try await b.sync()
            _ = try await a.sync()
            #expect(try await strings(stores[0], "notes") == ["today": "from a", "other": "b's other note"])
            #expect(try await strings(stores[1], "notes") == ["today": "from a", "other": "b's other note"])

            try await stores[1].resolveSyncConflict("notes", key: "today", keeping: .local)
            #expect(try await stores[1].syncConflicts().isEmpty)
            let resolved = try await b.sync()
            #expect(resolved.newConflicts.isEmpty, "the kept value is based on the server's version")
            _ = try await a.sync()
            for store in stores {
                #expect(try await strings(store, "notes") == ["today": "from b", "other": "b's other note"])
                #expect(try await store.syncConflicts().isEmpty)
                #expect(try await store.syncStatus()?.pendingOperations == 0)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflict resolved with the server's value or a merged one converges too`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "alice", collections: ["notes"])
            try await b.start(space: "alice", collections: ["notes"])
            try await stores[0].put("notes", key: "x", data: Data("a x"))
            try await stores[0].put("notes", key: "y", data: Data("a y"))
            try await stores[1].put("notes", key: "x", data: Data("b x"))
            try await stores[1].put("notes", key: "y", data: Data("b y"))
            _ = try await a.sync()
            let report = try await b.sync()
            #expect(Set(report.newConflicts.map(\.key)) == ["x", "y"])
            try await stores[1].resolveSyncConflict("notes", key: "x", keeping: .server)
            try await stores[1].resolveSyncConflict("notes", key: "y", keeping: .merged(Data("a y + b y")))
            _ = try await b.sync()
            _ = try await a.sync()
            for store in stores {
                #expect(try await strings(store, "notes") == ["x": "a x", "y": "a y + b y"])
                #expect(try await store.syncConflicts().isEmpty)
            }
            await #expect(throws: RecordStoreError.self) {
                try await stores[1].resolveSyncConflict("notes", key: "x", keeping: .local)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `with last-writer-wins the later push wins and no conflict is reported`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "alice", collections: ["prefs"], policy: .lastWriterWins)
            try await b.start(space: "alice", collections: ["prefs"], policy: .lastWriterWins)
            try await stores[0].put("prefs", key: "theme", data: Data("dark"))
            try await stores[1].put("prefs", key: "theme", data: Data("light"))
            _ = try await a.sync()
            let later = try await b.sync()
            _ = try await a.sync()
            #expect(later.newConflicts.isEmpty)
            for store in stores {
                #expect(try await strings(store, "prefs") == ["theme": "light"])
                #expect(try await store.syncConflicts().isEmpty)
            }
            #expect(try await stores[0].syncStatus()?.collections == ["prefs": .lastWriterWins])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `deletions propagate, also of a removed collection`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "alice", collections: ["notes", "drafts"])
            try await b.start(space: "alice", collections: ["notes", "drafts"])
            try await stores[0].replace("notes", values: ["keep": Data("k"), "drop": Data("d")])
            try await stores[0].replace("drafts", values: ["1": Data("one"), "2": Data("two")])
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await strings(stores[1], "drafts") == ["1": "one", "2": "two"])
            var removal = RecordChanges()
            removal["drop"] = nil
            try await stores[0].apply("notes", changes: removal)
            try await stores[0].removeCollection("drafts")
            _ = try await a.sync()
            let report = try await b.sync()
            #expect(report.pulledChanges == 3)
            #expect(try await strings(stores[1], "notes") == ["keep": "k"])
            #expect(try await stores[1].read("drafts")?.isEmpty ?? true)
            // A removed collection stays synced: writing it again is captured.
            try await stores[0].put("drafts", key: "3", data: Data("three"))
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await strings(stores[1], "drafts") == ["3": "three"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an edit concurrent with a deletion is a conflict with a tombstone, and keeping the edit restores it`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "s", collections: ["notes"])
            try await b.start(space: "s", collections: ["notes"])
            try await stores[0].put("notes", key: "k", data: Data("0"))
            try await stores[0].put("notes", key: "same", data: Data("0"))
            _ = try await a.sync()
            _ = try await b.sync()
            var removal = RecordChanges()
            removal["k"] = nil
            try await stores[0].apply("notes", changes: removal)
            try await stores[0].put("notes", key: "same", data: Data("agreed"))
            try await stores[1].put("notes", key: "k", data: Data("b's edit"))
            try await stores[1].put("notes", key: "same", data: Data("agreed"))
            _ = try await a.sync()
            let report = try await b.sync()
            #expect(report.newConflicts.map(\.key) == ["k"], "equal values on both sides are no conflict")
            let conflict = try #require(try await stores[1].syncConflicts().first)
            #expect(conflict.local == Data("b's edit"))
            #expect(conflict.server == nil, "the server deleted it")
            #expect(try await strings(stores[1], "notes") == ["same": "agreed"], "the deletion is the record's state")
            try await stores[1].resolveSyncConflict("notes", key: "k", keeping: .local)
            _ = try await b.sync()
            _ = try await a.sync()
            for store in stores {
                #expect(try await strings(store, "notes") == ["k": "b's edit", "same": "agreed"])
            }
        }
    }
}
