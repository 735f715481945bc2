import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Resolving after the device wrote the record again: `.local` keeps the latest local value,
/// `.server` the server's, and a later write the server applied settles the conflict, so the
/// older local value never comes back.
@Suite struct SyncResolutionTests {
    @Test(arguments: StoreKind.allCases)
    func `keeping local after typing again keeps the latest local value everywhere`(kind: StoreKind) async throws {
        try await withConflictOnToday(kind) { stores, a, b in
            // The person types on after the conflict appeared, then keeps their side.
            try await stores[1].put("notes", key: "today", data: Data("from b, edited"))
            try await stores[1].resolveSyncConflict("notes", key: "today", keeping: .local)
            #expect(try await strings(stores[1], "notes") == ["today": "from b, edited"])
            _ = try await b.sync()
            _ = try await a.sync()
            for store in stores {
                #expect(try await strings(store, "notes") == ["today": "from b, edited"])
                #expect(try await store.syncConflicts().isEmpty)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keeping the server after typing again puts the server's value back and pushes nothing`(
        kind: StoreKind
    ) async throws {
        try await withConflictOnToday(kind) { stores, a, b in
            try await stores[1].put("notes", key: "today", data: Data("from b, edited"))
            try await stores[1].resolveSyncConflict("notes", key: "today", keeping: .server)
            #expect(try await strings(stores[1], "notes") == ["today": "from a"])
            #expect(try await stores[1].syncStatus()?.pendingOperations == 0)
            #expect(try await b.sync().pushedOperations == 0)
            _ = try await a.sync()
            for store in stores { #expect(try await strings(store, "notes") == ["today": "from a"]) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keeping the server while an operation's conflict answer was lost does not stop sync`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let scripted = ScriptedServer(inner)
            let (a, b) = (RecordSync(store: stores[0], server: inner), RecordSync(store: stores[1], server: scripted))
            try await a.start(space: "alice", collections: ["notes"])
            try await b.start(space: "alice", collections: ["notes"])
            try await stores[0].apply("notes", changes: RecordChanges(upserts: ["today": Data("first"), "other": Data("o")]))
            _ = try await a.sync()
            _ = try await b.sync()
            try await stores[0].put("notes", key: "today", data: Data("from a"))
            try await stores[1].put("notes", key: "today", data: Data("from b"))
            _ = try await a.sync()
            #expect(try await b.sync().newConflicts.count == 1)

            // One operation types on in the conflicting record and changes another; the server
            // records a conflict for it (a changed "today" again), and that answer is lost.
            try await stores[0].put("notes", key: "today", data: Data("from a, again"))
            _ = try await a.sync()
            try await stores[1].apply("notes", changes: RecordChanges(upserts: ["today": Data("typed on"), "other": Data("o, b")]))
            await scripted.setLoseAnswers(true)
            await #expect(throws: SyncError.self) { try await b.push() }
            await scripted.setLoseAnswers(false)

            // Keeping the server's value drops the record from the operation; the operation goes
            // again, and its conflict, recorded at its first delivery, names that record.
            try await stores[1].resolveSyncConflict("notes", key: "today", keeping: .server)
            _ = try await b.sync()
            _ = try await b.sync()
            _ = try await a.sync()
            for store in stores {
                #expect(try await strings(store, "notes") == ["today": "from a, again", "other": "o, b"])
            }
            #expect(try await stores[1].syncStatus()?.pendingOperations == 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflict the device's later write settled is gone and never brings the older value back`(
        kind: StoreKind
    ) async throws {
        try await withConflictOnToday(kind) { stores, a, b in
            // Typing after the conflict appeared, synced before resolving: the server applies it.
            try await stores[1].put("notes", key: "today", data: Data("from b, later"))
            let report = try await b.sync()
            #expect(report.pushedOperations == 1)
            #expect(report.newConflicts.isEmpty)
            #expect(try await stores[1].syncConflicts().isEmpty, "the applied write settled the conflict")
            let error = await #expect(throws: RecordStoreError.self) {
                try await stores[1].resolveSyncConflict("notes", key: "today", keeping: .local)
            }
            #expect(error?.code == .invalidArgument)
            _ = try await a.sync()
            for store in stores { #expect(try await strings(store, "notes") == ["today": "from b, later"]) }
        }
    }

    @Test func `a NUL in a synced key is refused with a message that says NUL`() async throws {
        try await withStore(.inMemory) { store, _ in
            try await RecordSync(store: store, server: InMemorySyncServer()).start(space: "s", collections: ["notes"])
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("notes", key: "a\u{0}b", data: Data("x"))
            }
            let description = error?.errorDescription ?? ""
            #expect(description.contains("NUL"), "\(description)")
            #expect(!description.contains("must not be empty"), "\(description)")
        }
    }
}
