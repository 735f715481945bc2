import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// What docs/SYNC.md promises about registrations and conflicts: resolving a conflict that does
/// not exist throws and writes nothing; starting again with another policy changes it; a
/// registration outlives `removeCollection`; a second conflict of a record replaces the first.
@Suite struct SyncRegistrationTests {
    @Test(arguments: StoreKind.allCases)
    func `resolving a conflict that does not exist throws invalidArgument and writes nothing`(kind: StoreKind) async throws {
        try await withConflictOnToday(kind) { stores, _, b in
            let store = stores[1]
            try await store.put("notes", key: "calm", data: Data("untouched"))
            _ = try await b.sync()
            try await store.resolveSyncConflict("notes", key: "today", keeping: .server)
            let records = try await strings(store, "notes")
            let status = try await store.syncStatus()
            let changes = await store.changes(in: "notes")
            // A resolved conflict, a record never in conflict, a key never written, a
            // collection never synced: with every kind of resolution.
            let missing = [("notes", "today"), ("notes", "calm"), ("notes", "nothing"), ("other", "today")]
            for (collection, key) in missing {
                for resolution in [SyncResolution.local, .server, .merged(Data("merged")), .merged(nil)] {
                    let error = await #expect(throws: RecordStoreError.self, "\(collection)/\(key) \(resolution)") {
                        try await store.resolveSyncConflict(collection, key: key, keeping: resolution)
                    }
                    #expect(error?.code == .invalidArgument)
                    #expect(error?.operation == .syncResolve)
                    #expect(error?.collection == collection && error?.key == key)
                    #expect(error?.errorDescription?.contains("there is no sync conflict") == true, "\(error?.errorDescription ?? "")")
                }
            }
            #expect(try await strings(store, "notes") == records)
            #expect(try await store.syncStatus() == status, "no operation was captured, no cursor or conflict changed")
            // No commit reached the collection's stream: the next element is the next write.
            try await store.put("notes", key: "marker", data: Data("m"))
            let next = try await TestHelpers.changes(of: changes) { !$0.upserts.isEmpty || !$0.removals.isEmpty }
            #expect(next == RecordChanges(upserts: ["marker": Data("m")]))
        }
    }

    @Test func `resolving on a store that never synced throws and creates nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("never.sqlite")
            let store = RecordStore(url: url)
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.resolveSyncConflict("notes", key: "today", keeping: .local)
            }
            #expect(error?.code == .invalidArgument)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
            // A store that exists but does not sync: the file is left as it was.
            try await store.put("notes", key: "today", data: Data("v"))
            await store.close()
            let before = try Data(contentsOf: url)
            await #expect(throws: RecordStoreError.self) {
                try await store.resolveSyncConflict("notes", key: "today", keeping: .local)
            }
            await store.close()
            #expect(try Data(contentsOf: url) == before)
            #expect(try await store.syncStatus() == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `starting again with another policy changes it, both ways`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["prefs"]) { stores, a, b in
            try await stores[0].put("prefs", key: "theme", data: Data("light"))
            _ = try await a.sync()
            _ = try await b.sync()
            /// Both devices edit `theme`, a first; the number of conflicts b's sync reports.
            func concurrentEdit(_ n: Int) async throws -> Int {
                try await stores[0].put("prefs", key: "theme", data: Data("a\(n)"))
                try await stores[1].put("prefs", key: "theme", data: Data("b\(n)"))
                _ = try await a.sync()
                let conflicts = try await b.sync().newConflicts.count
                _ = try await a.sync()
                return conflicts
            }

            try await b.start(space: "alice", collections: ["prefs"], policy: .lastWriterWins)
            #expect(try await stores[1].syncStatus()?.collections == ["prefs": .lastWriterWins])
            #expect(try await concurrentEdit(1) == 0, "last writer wins: b's later push wins")
            for store in stores { #expect(try await strings(store, "prefs") == ["theme": "b1"]) }

            try await b.start(space: "alice", collections: ["prefs"], policy: .report)
            #expect(try await stores[1].syncStatus()?.collections == ["prefs": .report])
            #expect(try await concurrentEdit(2) == 1, "reported again")
            #expect(try await stores[1].syncConflicts().map(\.key) == ["theme"])
            #expect(try await stores[1].syncStatus()?.pendingOperations == 0, "starting again captured nothing")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a registration outlives removeCollection: later writes are captured and synced`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
            try await stores[0].replace("notes", values: ["x": Data("1"), "y": Data("2")])
            _ = try await a.sync()
            _ = try await b.sync()

            try await stores[0].removeCollection("notes")
            #expect(try await stores[0].syncStatus()?.collections == ["notes": .report], "still registered")
            try await stores[0].put("notes", key: "after", data: Data("3"))
            #expect(try await stores[0].syncStatus()?.pendingOperations == 2, "the removal and the later put")
            _ = try await a.sync()
            _ = try await b.sync()
            for store in stores { #expect(try await strings(store, "notes") == ["after": "3"]) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a second conflict of a record replaces the first, with the device's newer value`(kind: StoreKind) async throws {
        try await withConflictOnToday(kind) { stores, a, b in
            let first = try #require(try await stores[1].syncConflicts().first)
            #expect(first.local == Data("from b") && first.server == Data("from a"))
            // Unresolved, both edit the record again, a first.
            try await stores[0].put("notes", key: "today", data: Data("a again"))
            try await stores[1].put("notes", key: "today", data: Data("b again"))
            _ = try await a.sync()
            #expect(try await b.sync().newConflicts.count == 1)
            let conflicts = try await stores[1].syncConflicts()
            #expect(conflicts.count == 1, "one conflict per record")
            let second = try #require(conflicts.first)
            #expect(second.key == "today")
            #expect(second.local == Data("b again"), "the device's newer value")
            #expect(second.server == Data("a again"))
            #expect(try #require(second.serverVersion) > #require(first.serverVersion))
            #expect(try await strings(stores[1], "notes")["today"] == "a again")
            // Resolving it resolves the record: nothing of the first is left.
            try await stores[1].resolveSyncConflict("notes", key: "today", keeping: .local)
            #expect(try await stores[1].syncConflicts().isEmpty)
            _ = try await b.sync()
            _ = try await a.sync()
            for store in stores { #expect(try await strings(store, "notes")["today"] == "b again") }
        }
    }
}
