import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperSync

/// Stores already in people's hands must keep opening and reading in every later version.
@Suite struct FormatFixtureTests {
    @Test func `a format 1 store opens and reads as it was written`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            let progress = try #require(try await store.read("progress"))
            #expect(progress.count == 4)
            #expect(progress["positions/moby-dick"] == Data(#"{"chapter":13,"offset":120}"#.utf8))
            #expect(progress["vocabulary/café"] == Data(#"{"meaning":"coffee","seen":1}"#.utf8))
            #expect(try await store.read("settings") == [:])
            #expect(try await store.read("never") == nil)
            let notes = try #require(try await store.read("notes"))
            #expect(notes == ["empty": Data(), "binary": Data([0x00, 0xFF, 0x10, 0x80]), "nul\u{0}key": Data("nul".utf8)])
            #expect(try await store.record("progress", key: "positions/moby-dick")?.version == RecordVersion(2))
            #expect(try await store.record("notes", key: "binary")?.version == RecordVersion(3))
            #expect(try await store.info().formatVersion == 1, "reading never migrates")
            #expect(try await store.integrityCheck() == ["ok"])
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    @Test func `a format 1 store migrates forward keeping every record and gains an outbox`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            let collections = try await store.collections()
            #expect(collections.map(\.name) == ["notes", "progress", "settings"])
            #expect(collections.map(\.recordCount) == [3, 4, 0])
            #expect(try await store.read("progress")?["vocabulary/ballena"] == Data(#"{"meaning":"whale","seen":3}"#.utf8))
            try await store.apply(
                "progress", changes: RecordChanges(upserts: ["positions/moby-dick": Data("{}".utf8)]),
                enqueue: [OutboxMessage(kind: "progress.save", payload: Data("{}".utf8))])
            #expect(try await store.outbox.pending().count == 1)
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion, "the first write migrated it")
            #expect(try await store.record("progress", key: "positions/moby-dick")?.version == RecordVersion(3))
        }
    }

    @Test func `a format 2 store opens with its records, pending operations and dead letters`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-2.sqlite", into: directory)
            let store = RecordStore(url: url)
            #expect(try await store.info().formatVersion == 2, "reading never migrates")
            #expect(try await store.read("carts") == FormatTwoFixture.carts)
            #expect(try await store.collections().map(\.name) == ["carts"])
            let pending = try await store.outbox.pending()
            #expect(pending.map(\.id) == FormatTwoFixture.pending.map(\.id))
            #expect(pending.map(\.payload) == FormatTwoFixture.pending.map(\.payload))
            #expect(pending.map(\.orderingKey) == FormatTwoFixture.pending.map(\.orderingKey))
            #expect(pending.allSatisfy { $0.attempts == 0 && $0.lastError == nil })
            let dead = try #require(try await store.outbox.deadLetters().first)
            #expect(dead.id == FormatTwoFixture.deadLetter.id && dead.kind == "cart.checkout")
            #expect(dead.attempts == 1 && dead.lastError == "422 the cart is empty")
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 1 store migrates with every record kept and no item version recorded`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            let collections = try await store.collections()
            #expect(collections.map(\.name) == ["notes", "progress", "settings"])
            #expect(collections.map(\.recordCount) == [3, 4, 0])
            #expect(try await store.itemVersions() == [:])
            #expect(try await store.itemVersion(of: "progress") == nil)
            // A repository reads the records as version 1 items and records the version on
            // its first write.
            struct Note: Codable, Identifiable, Equatable, Sendable { var id: String }
            let repository = RecordRepository<Note>(store: store, collection: "settings")
            try await repository.save(Note(id: "a"))
            #expect(try await store.itemVersions() == ["settings": 1])
            #expect(try await store.read("progress")?.count == 4)
        }
    }

    @Test func `a format 4 store opens with its item versions`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-4.sqlite", into: directory)
            let header = try Data(contentsOf: url)
            #expect(header[60..<64] == Data([0, 0, 0, 4]), "the fixture was written by format 4 (user_version)")
            let store = RecordStore(url: url)
            #expect(try await store.itemVersions() == ["books": 2, "chapters": 1])
            #expect(try await store.itemVersion(of: "settings") == nil)
            #expect(try await store.read("settings") == [:])
            #expect(try await store.read("progress")?["vocabulary/café"] == Data(#"{"meaning":"coffee","seen":1}"#.utf8))
            let books = RecordRepository<ReadingApp.BookV2>(
                store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            #expect(try await books.load() == ReadingApp.migratedBooks)
            #expect(try await RecordRepository<Chapter>(store: store, collection: "chapters").load().count == 2)
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 4 store migrates to format 5 keeping everything, with nothing synced`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-4.sqlite", into: directory)
            let store = RecordStore(url: url)
            let progressBefore = try #require(try await store.read("progress"))
            try await store.put("later", key: "k", data: Data("written after the migration"))
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await store.read("progress") == progressBefore)
            #expect(try await store.read("settings") == [:])
            #expect(try await store.itemVersions() == ["books": 2, "chapters": 1])
            let books = RecordRepository<ReadingApp.BookV2>(
                store: store, collection: "books", itemVersion: 2, migrations: [ReadingApp.stepFrom1])
            #expect(try await books.load() == ReadingApp.migratedBooks)
            #expect(try await store.syncStatus() == nil)
            #expect(try await store.syncConflicts().isEmpty)
            // Nothing is synced until sync starts; then the existing records are captured.
            try await store.put("progress", key: "positions/new", data: Data("{}"))
            let sync = RecordSync(store: store, server: InMemorySyncServer())
            try await sync.start(space: "reader", collections: ["progress"])
            #expect(try await store.syncStatus()?.pendingOperations == 1)
            #expect(try await sync.push().pushedChanges == progressBefore.count + 1)
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 5 store opens with its sync state: queue, conflicts and values kept aside`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-5.sqlite", into: directory)
            let header = try Data(contentsOf: url)
            #expect(header[60..<64] == Data([0, 0, 0, 5]), "the fixture was written by format 5 (user_version)")
            let store = RecordStore(url: url)
            let status = try #require(try await store.syncStatus())
            #expect(status.space == "alice")
            #expect(status.collections == ["notes": .report, "prefs": .lastWriterWins])
            #expect(status.pendingOperations == 2)
            #expect(status.conflicts == 1)
            #expect(status.cursor == SyncCursor(counter: 3))
            let conflicts = try await store.syncConflicts()
            #expect(conflicts.map(\.key) == ["shared"])
            #expect(conflicts.first?.local == Data("mine") && conflicts.first?.server == Data("theirs"))
            #expect(try await store.read("notes") == ["shared": Data("theirs"), "today": Data("v2 local")])
            #expect(try await store.read("scratch") == ["local": Data("not synced")])
            #expect(try await store.info().formatVersion == 5)
            // Writes keep being captured; the kept-aside value is what the server holds.
            try await store.put("notes", key: "new", data: Data("n"))
            #expect(try await store.syncStatus()?.pendingOperations == 3)
            let aside = try await store.performRead(.syncPull, collection: nil) { source in
                try source.engine?.syncRecords.aside(SyncRecordKey(collection: "notes", key: "today"))
            }
            #expect(aside?.value == .payload(Data("v2 theirs")))
            try await store.resolveSyncConflict("notes", key: "shared", keeping: .local)
            #expect(try await store.value("notes", key: "shared") == Data("mine"))
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    /// Regenerates `Fixtures/format-2.sqlite` (see Fixtures/README.md): runs only with
    /// `RECORDKEEPER_WRITE_FIXTURE=/path/to/format-2.sqlite swift test --filter FormatFixtureTests`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURE"] != nil))
    func `write the format 2 fixture`() async throws {
        let path = try #require(ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURE"])
        #expect(!FileManager.default.fileExists(atPath: path), "refusing to overwrite \(path)")
        try await FixtureWriters.writeStore(format: 2, to: URL(fileURLWithPath: path)) { try await FormatTwoFixture.write(to: $0) }
    }

    @Test func `a format 1 store takes new writes after the versions it holds`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            try await store.put("progress", key: "positions/moby-dick", data: Data("{}".utf8))
            let version = try #require(try await store.record("progress", key: "positions/moby-dick")).version
            #expect(version == RecordVersion(3), "an update gives the record its previous version + 1")
            try await store.removeCollection("notes")
            try await store.put("notes", key: "binary", data: Data([1]))
            let recreated = try #require(try await store.record("notes", key: "binary")).version
            #expect(recreated > RecordVersion(3), "a record written again after removal never gets an old version back")
            #expect(try await store.read("progress")?.count == 4)
        }
    }

    @Test func `a format 1 store migrates to format 3 with every record kept and an empty change log`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            try await store.write { _ in }  // the first write migrates; reads never do
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await store.read("progress")?.count == 4)
            #expect(try await store.read("notes")?.count == 3)
            #expect(try await store.read("settings") == [:])
            #expect(try await store.record("notes", key: "binary")?.version == RecordVersion(3))
            #expect(try changeLog(at: url).isEmpty)
            // Streams work on the migrated store.
            var changes = await store.changes(in: "progress").makeAsyncIterator()
            try await store.apply("progress", changes: RecordChanges(upserts: [:], removals: ["vocabulary/café"]))
            #expect(await changes.next() == RecordChanges(upserts: [:], removals: ["vocabulary/café"]))
            #expect(try changeLog(at: url) == [ChangeLogRow(seq: 1, collection: "progress", key: "vocabulary/café")])
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 3 store opens, reads as written and keeps its change log`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-3.sqlite", into: directory)
            #expect(try changeLog(at: url) == Self.format3Log)
            let store = RecordStore(url: url)
            #expect(try await store.info().formatVersion == 3, "reading never migrates")
            let progress = try #require(try await store.read("progress"))
            #expect(progress.count == 3)
            #expect(progress["positions/moby-dick"] == Data(#"{"chapter":13,"offset":120}"#.utf8))
            #expect(progress["vocabulary/ballena"] == nil)
            #expect(try await store.read("notes") == ["empty": Data(), "binary": Data([0x00, 0xFF, 0x10, 0x80])])
            #expect(try await store.read("settings") == [:])
            #expect(try await store.record("progress", key: "positions/moby-dick")?.version == RecordVersion(2))
            // New entries continue the sequence.
            var changes = await store.changes(in: "notes").makeAsyncIterator()
            try await store.put("notes", key: "later", data: Data("x".utf8))
            #expect(await changes.next() == RecordChanges(upserts: ["later": Data("x".utf8)]))
            #expect(try changeLog(at: url).last == ChangeLogRow(seq: 9, collection: "notes", key: "later"))
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    /// The change log `format-3.sqlite` holds (see `writeFormat3Fixture`).
    static let format3Log: [ChangeLogRow] = [
        .init(seq: 1, collection: "progress", key: "positions/moby-dick"),
        .init(seq: 2, collection: "progress", key: "positions/don-quijote"),
        .init(seq: 3, collection: "progress", key: "vocabulary/ballena"),
        .init(seq: 4, collection: "progress", key: "vocabulary/café"),
        .init(seq: 5, collection: "progress", key: "positions/moby-dick"),
        .init(seq: 6, collection: "notes", key: "empty"),
        .init(seq: 7, collection: "notes", key: "binary"),
        .init(seq: 8, collection: "progress", key: "vocabulary/ballena"),
    ]

    /// Writes `Fixtures/format-3.sqlite` (the generator documented in Fixtures/README.md).
    /// Runs only when asked: `RECORDKEEPER_WRITE_FIXTURE=format-3 swift test --filter writeFormat3Fixture`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURE"] == "format-3"))
    func writeFormat3Fixture() async throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let url = fixtures.appendingPathComponent("format-3.sqlite")
        for suffix in ["", "-wal", "-shm", "-observers"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.removeItem(atPath: url.path + suffix)
        }
        try await FixtureWriters.writeStore(format: 3, to: url) { scratch in
            let store = RecordStore(url: scratch)
            do {
                // Writers log only while a stream observes the store: keep one until the writes
                // are done (the change log compared below shows they logged).
                let stream = await store.changes(in: "progress")
                try await store.put("progress", key: "positions/moby-dick", data: Data(#"{"chapter":12,"offset":3400}"#.utf8))
                try await store.put("progress", key: "positions/don-quijote", data: Data(#"{"chapter":1,"offset":0}"#.utf8))
                try await store.put("progress", key: "vocabulary/ballena", data: Data(#"{"meaning":"whale","seen":3}"#.utf8))
                try await store.put("progress", key: "vocabulary/café", data: Data(#"{"meaning":"coffee","seen":1}"#.utf8))
                try await store.put("progress", key: "positions/moby-dick", data: Data(#"{"chapter":13,"offset":120}"#.utf8))
                try await store.replace("settings", values: [:])
                try await store.put("notes", key: "empty", data: Data())
                try await store.put("notes", key: "binary", data: Data([0x00, 0xFF, 0x10, 0x80]))
                try await store.apply("progress", changes: RecordChanges(upserts: [:], removals: ["vocabulary/ballena"]))
                withExtendedLifetime(stream) {}
            }
            store.watcher.waitUntilIdleForTesting()  // its connection closed
            await store.close()  // the last connection: the WAL is checkpointed into the file
            try FileManager.default.removeItem(atPath: scratch.path + "-observers")
            for suffix in ["-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: scratch.path + suffix)) }
        }
        #expect(try changeLog(at: url) == Self.format3Log)
    }

    @Test func `the migration plan is ordered and ends at the current format`() {
        // One step per format, numbered 1, 2, 3, … in the order they run.
        let versions = StoreFormat.migrations.map(\.version)
        #expect(versions == Array(1...versions.count))
        #expect(StoreFormat.currentVersion == versions.last)
    }
}

/// One row of a store's change log.
struct ChangeLogRow: Equatable {
    let seq: Int64
    let collection: String
    let key: String
}

/// The change log of the store at `url`, read through a connection of its own.
func changeLog(at url: URL) throws -> [ChangeLogRow] {
    let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
    return try connection.withStatement("SELECT seq, collection, key FROM change_log ORDER BY seq") { statement in
        var rows: [ChangeLogRow] = []
        while try statement.step() {
            rows.append(ChangeLogRow(seq: statement.int64(at: 0), collection: statement.string(at: 1), key: statement.string(at: 2)))
        }
        return rows
    }
}

/// What `Fixtures/format-2.sqlite` holds, and the program that wrote it.
enum FormatTwoFixture {
    static let carts = [
        "ana": Data(#"{"items":[{"sku":"tea","qty":2}],"version":2}"#.utf8),
        "bob": Data(#"{"items":[],"version":1}"#.utf8),
    ]
    static let pending = [
        OutboxMessage(
            id: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!, kind: "cart.add-item",
            payload: Data(#"{"sku":"tea","qty":1}"#.utf8), orderingKey: "cart/ana"),
        OutboxMessage(
            id: UUID(uuidString: "00000000-0000-4000-8000-000000000002")!, kind: "cart.set-quantity",
            payload: Data(#"{"sku":"tea","qty":2}"#.utf8), orderingKey: "cart/ana"),
        OutboxMessage(
            id: UUID(uuidString: "00000000-0000-4000-8000-000000000003")!, kind: "cart.created",
            payload: Data(), orderingKey: nil),
    ]
    static let deadLetter = OutboxMessage(
        id: UUID(uuidString: "00000000-0000-4000-8000-000000000004")!, kind: "cart.checkout",
        payload: Data(#"{"cart":"bob"}"#.utf8), orderingKey: "cart/bob")

    /// Rejects every operation (only the checkout is queued when it runs).
    struct RejectEverything: OutboxTransport {
        func deliver(_ operation: OutboxOperation) async throws {
            throw OutboxDeliveryFailure.permanent("422 the cart is empty")
        }
    }

    static func write(to url: URL) async throws {
        let store = RecordStore(url: url)
        try await store.put("carts", key: "bob", data: carts["bob"]!)
        try await store.enqueue([deadLetter])
        try await OutboxProcessor(store: store, transport: RejectEverything()).deliverDue()
        try await store.apply(
            "carts", changes: RecordChanges(upserts: ["ana": Data(#"{"items":[{"sku":"tea","qty":1}],"version":1}"#.utf8)]),
            enqueue: [pending[0]])
        try await store.write { tx in
            try tx.put("carts", key: "ana", data: carts["ana"]!)
            try tx.enqueue(pending[1])
            try tx.enqueue(pending[2])
        }
        await store.close()
    }
}
