import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperSync
import RecordKeeperTestSupport

/// Capture: every committed change of a synced collection becomes part of one operation per
/// local transaction, in that transaction, through any store on the file; the records present
/// when sync starts are uploaded once; start validates its space.
@Suite struct SyncCaptureTests {
    @Test func `changes through a second RecordStore on the same file are captured`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let first = RecordStore(url: url)
            try await RecordSync(store: first, server: InMemorySyncServer()).start(space: "s", collections: ["notes"])
            let second = RecordStore(url: url)
            try await second.put("notes", key: "from-second", data: Data("2"))
            try await second.put("scratch", key: "unsynced", data: Data("x"))
            try await first.put("notes", key: "from-first", data: Data("1"))
            let pending = try await pendingOperations(first)
            #expect(pending == [
                [SyncRecordKey("notes", "from-second"): Data("2")],
                [SyncRecordKey("notes", "from-first"): Data("1")],
            ])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `one local transaction is one operation holding its records' final values`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("notes", values: ["gone": Data("g")])
            let sync = RecordSync(store: store, server: InMemorySyncServer())
            try await sync.start(space: "s", collections: ["notes", "tags"])
            _ = try await sync.push()
            try await store.write { tx in
                try tx.put("notes", key: "a", data: Data("first"))
                try tx.put("notes", key: "a", data: Data("final"))
                try tx.put("tags", key: "t", data: Data("tag"))
                try tx.put("scratch", key: "s", data: Data("not synced"))
                var removal = RecordChanges()
                removal["gone"] = nil
                try tx.apply("notes", changes: removal)
            }
            // A write that changes nothing captures nothing.
            try await store.put("tags", key: "t", data: Data("tag"))
            let pending = try await pendingOperations(store)
            #expect(pending == [[
                SyncRecordKey("notes", "a"): Data("final"),
                SyncRecordKey("tags", "t"): Data("tag"),
                SyncRecordKey("notes", "gone"): Data?.none,
            ]])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `every write path is captured: apply, replace, repositories, removeCollection`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordSync(store: store, server: InMemorySyncServer()).start(space: "s", collections: ["books", "notes"])
            var changes = RecordChanges()
            changes["n1"] = Data("1")
            try await store.apply("notes", changes: changes)
            try await store.replace("notes", values: ["n2": Data("2")])
            let books = RecordRepository<ReadingApp.BookV1>(store: store, collection: "books")
            try await books.save(ReadingApp.version1Books[0])  // records the item version
            try await books.save(ReadingApp.version1Books[1])  // the fast path that remembers the collection
            try await books.delete(ReadingApp.version1Books[0].id)
            try await store.removeCollection("notes")
            let pending = try await pendingOperations(store)
            #expect(pending.count == 6)
            guard pending.count == 6 else { return }
            #expect(pending[0] == [SyncRecordKey("notes", "n1"): Data("1")])
            #expect(pending[1] == [SyncRecordKey("notes", "n1"): Data?.none, SyncRecordKey("notes", "n2"): Data("2")])
            #expect(pending[2].keys.map(\.key) == ["dune"])
            #expect(pending[3].keys.map(\.key) == ["moby-dick"])
            #expect(pending[4] == [SyncRecordKey("books", "dune"): Data?.none])
            #expect(pending[5] == [SyncRecordKey("notes", "n2"): Data?.none])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a rolled back transaction captures nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordSync(store: store, server: InMemorySyncServer()).start(space: "s", collections: ["notes"])
            struct Abort: Error {}
            await #expect(throws: Abort.self) {
                try await store.write { tx in
                    try tx.put("notes", key: "a", data: Data("never"))
                    throw Abort()
                }
            }
            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) { try await store.put("notes", key: "b", data: Data("never")) }
            #expect(try await pendingOperations(store).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `records present at start are uploaded once, in operations of up to 1000 records`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var values: [String: Data] = [:]
            for n in 0..<2_500 { values[String(format: "k%05d", n)] = Data("v\(n)") }
            try await store.replace("notes", values: values)
            let server = ScriptedServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            let pending = try await pendingOperations(store)
            #expect(pending.map(\.count) == [1000, 1000, 500])
            try await sync.start(space: "s", collections: ["notes"])
            #expect(try await pendingOperations(store).count == 3, "starting again uploads nothing twice")
            let report = try await sync.sync()
            #expect(report.pushedChanges == 2_500)
            #expect(await server.pushes == 3)
            try await sync.start(space: "s", collections: ["notes"])
            #expect(try await sync.sync().pushedOperations == 0)
            let other = RecordSync(store: RecordStore.inMemory(), server: server)
            try await other.start(space: "s", collections: ["notes"])
            _ = try await other.sync()
            #expect(try await other.store.read("notes") == values)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `large records present at start are uploaded in operations of about a mebibyte, a larger one alone`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var values: [String: Data] = [:]
            for key in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"] {
                values[key] = Data(repeating: UInt8(ascii: "x"), count: 300_000)
            }
            values["k"] = Data(repeating: UInt8(ascii: "y"), count: 2_000_000)
            values["l"] = Data("small")
            try await store.replace("notes", values: values)
            let server = ScriptedServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            let pending = try await pendingOperations(store)
            #expect(pending.map { $0.keys.map(\.key).sorted() }
                    == [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"], ["j"], ["k"], ["l"]])
            #expect(try await sync.sync().pushedChanges == 12)
            let other = RecordSync(store: RecordStore.inMemory(), server: server)
            try await other.start(space: "s", collections: ["notes"])
            _ = try await other.sync()
            #expect(try await other.store.read("notes") == values)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a local transaction too large for one push is captured as several operations in key order`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let server = ScriptedServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            // 30 records of 200 KB: about 8 MB in a push, past what one operation may take.
            var values: [String: Data] = [:]
            for n in 0..<30 { values[String(format: "k%02d", n)] = Data(repeating: UInt8(ascii: "a") + UInt8(n % 26), count: 200_000) }
            _ = try await store.apply("notes", changes: RecordChanges(upserts: values))
            let pending = try await pendingOperations(store)
            #expect(pending.count == 2, "\(pending.map(\.count))")
            let keys = pending.map { $0.keys.map(\.key).sorted() }
            #expect(keys.joined().sorted() == values.keys.sorted(), "every change captured once")
            #expect(keys.count == 2 && keys[0].last! < keys[1].first!, "the parts follow key order")
            // A small transaction stays one operation.
            _ = try await store.apply("notes", changes: RecordChanges(upserts: ["x": Data("1"), "y": Data("2")]))
            #expect(try await pendingOperations(store).count == 3)
            #expect(try await sync.sync().pushedOperations == 3)
            let other = RecordSync(store: RecordStore.inMemory(), server: server)
            try await other.start(space: "s", collections: ["notes"])
            _ = try await other.sync()
            #expect(try await other.store.read("notes") == values.merging(["x": Data("1"), "y": Data("2")]) { $1 })
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `start with another space is refused and changes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let sync = RecordSync(store: store, server: InMemorySyncServer())
            try await sync.start(space: "alice", collections: ["notes"])
            try await store.put("notes", key: "a", data: Data("1"))
            let before = try await store.syncStatus()
            let error = await #expect(throws: SyncError.self) {
                try await sync.start(space: "bob", collections: ["notes", "other"])
            }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("this store syncs space 'alice'") == true)
            #expect(try await store.syncStatus() == before)
            #expect(try await pendingOperations(store).count == 1)
            await #expect(throws: SyncError.self) { try await sync.start(space: "", collections: ["notes"]) }
            await #expect(throws: SyncError.self) { try await sync.start(space: "alice", collections: [""]) }
            let fresh = RecordSync(store: RecordStore.inMemory(), server: InMemorySyncServer())
            await #expect(throws: SyncError.self) { try await fresh.start(space: "alice", collections: []) }
            await #expect(throws: SyncError.self) { try await fresh.sync() }
            #expect(try await fresh.store.syncStatus() == nil)
        }
    }

    @Test func `reading sync state never writes: no file, and a format 4 store, answer nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let missing = RecordStore(url: directory.appendingPathComponent("missing.sqlite"))
            #expect(try await missing.syncStatus() == nil)
            #expect(try await missing.syncConflicts().isEmpty)
            await #expect(throws: RecordStoreError.self) {
                try await missing.resolveSyncConflict("notes", key: "a", keeping: .server)
            }
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("missing.sqlite").path))

            let url = try fixtureCopy("format-4.sqlite", into: directory)
            let before = try contents(of: url)
            let old = RecordStore(url: url)
            #expect(try await old.syncStatus() == nil)
            #expect(try await old.syncConflicts().isEmpty)
            await old.close()
            #expect(try contents(of: url) == before)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the status tells space, device, collections, cursor, queue and conflicts`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let sync = RecordSync(store: store, server: InMemorySyncServer())
            try await sync.start(space: "alice", collections: ["notes"])
            try await sync.start(space: "alice", collections: ["prefs"], policy: .lastWriterWins)
            try await store.put("notes", key: "a", data: Data("1"))
            try await store.put("prefs", key: "b", data: Data("2"))
            let status = try #require(try await store.syncStatus())
            #expect(status.space == "alice")
            #expect(UUID(uuidString: status.device) != nil)
            #expect(status.collections == ["notes": .report, "prefs": .lastWriterWins])
            #expect(status.cursor == .start)
            #expect(status.pendingOperations == 2)
            #expect(status.conflicts == 0)
            let report = try await sync.sync()
            let after = try #require(try await store.syncStatus())
            #expect(after.device == status.device, "the device id is generated once")
            #expect(after.pendingOperations == 0)
            #expect(after.cursor == report.cursor)
            #expect(report.cursor == SyncCursor(counter: 2))
        }
    }
}
