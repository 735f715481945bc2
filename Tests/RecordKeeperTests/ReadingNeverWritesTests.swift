import TestHelpers
import CSQLite
import Foundation
import Testing
@testable import RecordKeeper

/// What may be at a store's path before a reading request.
enum ExistingFile: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case missing
    case zeroBytes
    case emptyDatabaseRollbackJournal
    case emptyDatabaseWAL
    case store
    case foreignDatabase
    case newerFormatStore

    var testDescription: String { rawValue }

    /// Puts this kind of file at `url`, as other programs (or an earlier run) would leave it.
    func make(at url: URL) async throws {
        switch self {
        case .missing:
            break
        case .zeroBytes:
            try Data().write(to: url)
        case .emptyDatabaseRollbackJournal:
            try rawSQLite(url, "PRAGMA user_version = 0")
        case .emptyDatabaseWAL:
            // What `sqlite3 e.db "PRAGMA journal_mode=wal;"` leaves: 4,096 bytes, no tables.
            try rawSQLite(url, "PRAGMA journal_mode = WAL")
        case .store, .newerFormatStore:
            let store = RecordStore(url: url)
            try await store.replace("notes", values: ["a": Data("1"), "b": Data("2")])
            await store.close()
            if self == .newerFormatStore { try rawSQLite(url, "PRAGMA user_version = 99") }
        case .foreignDatabase:
            try rawSQLite(url, "CREATE TABLE theirs (x); INSERT INTO theirs VALUES (1)")
        }
    }

    /// The error code every read must throw, or nil when reads answer.
    var refusal: RecordStoreError.Code? {
        switch self {
        case .foreignDatabase: .foreignDatabase
        case .newerFormatStore: .newerFormat
        default: nil
        }
    }
}

/// Every file in `directory` (names and bytes): equal before and after means nothing was
/// created, removed or changed there.
func directoryFingerprint(_ directory: URL) throws -> [String: Data] {
    var result: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
        result[name] = try Data(contentsOf: directory.appendingPathComponent(name))
    }
    return result
}

@Suite struct ReadingNeverWritesTests {
    @Test(arguments: ExistingFile.allCases)
    func `reading requests leave the file and its directory byte for byte as they were`(file: ExistingFile) async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            try await file.make(at: url)
            let before = try directoryFingerprint(directory)

            let store = RecordStore(url: url)
            if let refusal = file.refusal {
                try await expectEveryReadRefused(store, code: refusal)
            } else {
                let expected: [String: Data]? = file == .store ? ["a": Data("1"), "b": Data("2")] : nil
                try await expectEveryRead(store, finds: expected)
            }
            await store.close()

            #expect(try directoryFingerprint(directory) == before)
            if file == .missing {
                #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
            }
        }
    }

    @Test func `reading a format 1 store, which predates the outbox and sync, leaves it as it was`() async throws {
        try await withTemporaryDirectory { directory in
            let source = try #require(Bundle.module.url(forResource: "Fixtures/format-1.sqlite", withExtension: nil))
            let url = directory.appendingPathComponent("records.sqlite")
            try FileManager.default.copyItem(at: source, to: url)
            let before = try directoryFingerprint(directory)
            let store = RecordStore(url: url)
            #expect(try await store.read("progress")?.count == 4)
            #expect(try await store.outbox.pending().isEmpty)
            #expect(try await store.outbox.deadLetters().isEmpty)
            #expect(try await store.syncStatus() == nil)
            #expect(try await store.syncConflicts().isEmpty)
            await store.close()
            #expect(try directoryFingerprint(directory) == before)
        }
    }

    @Test func `a read of a missing file in a missing directory creates neither`() async throws {
        try await withTemporaryDirectory { directory in
            let store = RecordStore(url: directory.appendingPathComponent("a/b/records.sqlite"))
            try await expectEveryRead(store, finds: nil)
            try await store.removeCollection("notes")
            await store.close()
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    @Test func `the first write turns an empty database into a store and reads then find it`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            try await ExistingFile.emptyDatabaseWAL.make(at: url)
            let store = RecordStore(url: url)
            #expect(try await store.read("notes") == nil)
            try await store.put("notes", key: "a", data: Data("1"))
            #expect(try await store.read("notes") == ["a": Data("1")])
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
        }
    }

    @Test func `a read while the writer is open reads beside it`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("notes", key: "a", data: Data("1"))
            // A second instance only reads: it sees the first one's commits at once.
            let reader = RecordStore(url: url)
            #expect(try await reader.value("notes", key: "a") == Data("1"))
            try await store.put("notes", key: "a", data: Data("2"))
            #expect(try await reader.value("notes", key: "a") == Data("2"))
            await reader.close()
            await store.close()
            // No -wal or -shm is left; the writer's observers' lock file stays (docs/FORMAT.md).
            #expect(try directoryFingerprint(directory).keys.sorted() == ["records.sqlite", "records.sqlite-observers"])
        }
    }

    /// Runs every reading request and checks its answer: `finds` is the content of "notes"
    /// (nil: no store, so no records anywhere).
    private func expectEveryRead(_ store: RecordStore, finds expected: [String: Data]?) async throws {
        #expect(try await store.read("notes") == expected)
        #expect(try await store.value("notes", key: "a") == expected?["a"])
        #expect(try await store.record("notes", key: "a")?.data == expected?["a"])
        #expect(try await store.records("notes")?.map(\.key) == expected.map { $0.keys.sorted() })
        #expect(try await store.allRecords("notes")?.count == expected?.count)
        #expect(try await store.versionedRecords("notes")?.count == expected?.count)
        #expect(try await store.collections().map(\.name) == (expected == nil ? [] : ["notes"]))
        let seen = try await store.snapshot { snapshot in
            var keys: [String] = []
            let found = try snapshot.forEachRecord(in: "notes") { keys.append($0.key) }
            return (try snapshot.collections().count, try snapshot.read("notes"), found, keys)
        }
        #expect(seen.0 == (expected == nil ? 0 : 1))
        #expect(seen.1 == expected)
        #expect(seen.2 == (expected != nil))
        #expect(seen.3 == expected.map { $0.keys.sorted() } ?? [])
        #expect(try await store.integrityCheck() == ["ok"])
        #expect(try await store.info().formatVersion == (expected == nil ? 0 : StoreFormat.currentVersion))
        #expect(try await store.outbox.pending().isEmpty)
        #expect(try await store.outbox.deadLetters().isEmpty)
        #expect(try await store.syncStatus() == nil)
        #expect(try await store.syncConflicts().isEmpty)
    }

    private func expectEveryReadRefused(_ store: RecordStore, code: RecordStoreError.Code) async throws {
        let reads: [@Sendable () async throws -> Void] = [
            { _ = try await store.read("notes") },
            { _ = try await store.value("notes", key: "a") },
            { _ = try await store.records("notes") },
            { _ = try await store.collections() },
            { _ = try await store.snapshot { try $0.collections() } },
            { _ = try await store.info() },
            { _ = try await store.integrityCheck() },
            { _ = try await store.outbox.pending() },
            { _ = try await store.outbox.deadLetters() },
            { _ = try await store.syncStatus() },
            { _ = try await store.syncConflicts() },
        ]
        for read in reads {
            let error = await #expect(throws: RecordStoreError.self) { try await read() }
            #expect(error?.code == code)
        }
    }
}
