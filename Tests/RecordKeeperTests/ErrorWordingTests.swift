import TestHelpers
import CSQLite
import Foundation
import Testing
@testable import RecordKeeper

/// The sentences errors and conflicts show people: each names what it concerns and says what
/// was found, in one well-formed sentence.
@Suite struct ErrorWordingTests {
    @Test func `a reason ending in its own period gets no second one`() {
        let error = RecordStoreError(
            code: .cannotOpen, operation: .open, path: "/tmp/ro/sub/s.sqlite",
            detail: "could not create the directory /tmp/ro/sub: You don’t have permission.")
        #expect(error.errorDescription == "Could not open the store at /tmp/ro/sub/s.sqlite: "
                + "could not create the directory /tmp/ro/sub: You don’t have permission.")
    }

    @Test(arguments: [EMFILE, ENFILE])
    func `a failure of the open files limit says so, not that the disk or directory is at fault`(number: Int32) {
        // SQLite reports it as "unable to open database file" or as an I/O error (a trial saw
        // "Check that the directory exists" and "Check the disk").
        for code in [SQLITE_CANTOPEN, SQLITE_IOERR] {
            let error = RecordStoreError(
                SQLiteFailure(code: code, message: "unable to open database file", systemErrno: number),
                operation: .put, path: "/tmp/s.sqlite")
            let scope = number == EMFILE ? "in this process" : "on this system"
            #expect(error.errorDescription?.contains("too many files are open \(scope)") == true, "\(error)")
            #expect(error.recoverySuggestion?.contains("ulimit -n") == true, "\(error)")
        }
        // SQLite refreshes its system error only for open and I/O failures: another code may
        // come with an older one, which says nothing about this failure.
        let readOnly = RecordStoreError(
            SQLiteFailure(code: SQLITE_READONLY, message: "attempt to write a readonly database", systemErrno: number),
            operation: .put, path: "/tmp/s.sqlite")
        #expect(readOnly.code == .readOnly)
        #expect(readOnly.errorDescription?.contains("too many files") == false, "\(readOnly)")
    }

    @Test func `a read of the whole store names the store, not a missing collection`() {
        let error = RecordStoreError(code: .corruptStore, operation: .snapshot, path: "/tmp/s.sqlite")
        #expect(error.errorDescription?.hasPrefix("Could not read the store at /tmp/s.sqlite: the database file is damaged") == true,
                "\(error.errorDescription ?? "-")")
    }

    @Test func `a read-only error with a detail says what is not writable`() {
        let error = RecordStoreError(
            code: .readOnly, operation: .open, path: "/tmp/ro/s.sqlite",
            detail: "the store could not be created because the directory /tmp/ro is not writable (Permission denied)")
        #expect(error.errorDescription == "Could not open the store at /tmp/ro/s.sqlite: the store could not be "
                + "created because the directory /tmp/ro is not writable (Permission denied).")
        let plain = RecordStoreError(code: .readOnly, operation: .put, collection: "c", key: "k", path: "/tmp/s.sqlite")
        #expect(plain.errorDescription == "Could not save to collection \"c\" (key \"k\") in store /tmp/s.sqlite: the store is read-only.")
    }

    @Test(arguments: StoreKind.allCases)
    func `a record that must be absent but exists is reported with its version`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            let conflict = await #expect(throws: RecordConflict.self) {
                try await store.apply("c", changes: RecordChanges(upserts: ["k": Data("2")]), expecting: ["k": nil])
            }
            #expect(conflict?.errorDescription
                    == "Could not save to collection \"c\": \"k\" already exists, at version 1; nothing was written.")
            #expect(conflict?.expectedVersions == ["k": RecordVersion?.none])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a delete of an item the repository never loaded says so`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Chapter>(store: store, collection: "chapters").save([Chapter(id: 7, title: "x")])
            let unseeing = RecordRepository<Chapter>(store: store, collection: "chapters")
            let conflict = await #expect(throws: RecordConflict.self) { try await unseeing.delete(7) }
            #expect(conflict?.errorDescription
                    == "Could not delete from collection \"chapters\": \"7\" is stored, at version 1, but was never loaded; "
                    + "nothing was removed.")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a stale or removed record is reported with the versions expected and found`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "a", data: Data("1"))
            try await store.put("c", key: "a", data: Data("2"))
            try await store.put("c", key: "b", data: Data("1"))
            var changes = RecordChanges()
            changes["a"] = Data("3")
            changes["gone"] = nil
            let conflict = await #expect(throws: RecordConflict.self) {
                try await store.apply("c", changes: changes, expecting: ["a": RecordVersion(1), "gone": RecordVersion(4)])
            }
            #expect(conflict?.errorDescription == "Could not save to collection \"c\": "
                    + "\"a\" changed since it was loaded (version 1, now 2); "
                    + "no record \"gone\" (expected version 4); nothing was written.")
        }
    }

    @Test func `every repository error is one sentence naming its collection and key`() {
        let codes: [RepositoryError.Code] = [
            .undecodableRecord, .keyMismatch, .codingMismatch, .unencodableValue, .unsupportedSchemaVersion,
            .invalidDocumentKey, .migrationFailed, .missingMigrationStep, .newerItemVersion,
        ]
        for code in codes {
            let sentence = RepositoryError(code: code, collection: "events", key: "launch").errorDescription ?? ""
            #expect(sentence.hasPrefix("Could not "), "\(code): \(sentence)")
            #expect(sentence.contains(#"collection "events" (key "launch")"#), "\(code): \(sentence)")
            #expect(sentence.hasSuffix("."), "\(code): \(sentence)")
            #expect(!sentence.contains("RepositoryError"), "\(code): \(sentence)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a repository opened with other payload strategies says what was recorded and what to do`(kind: StoreKind) async throws {
        struct Event: Codable, Identifiable, Equatable, Sendable {
            var id: String
            var roomName: String
        }
        try await withStore(kind) { store, _ in
            try await RecordRepository<Event>(store: store, collection: "events").save(Event(id: "a", roomName: "Main"))
            let snake = RecordRepository<Event>(store: store, collection: "events", strategies: .init(keys: .snakeCase))
            let error = await #expect(throws: RepositoryError.self) { try await snake.load() }
            #expect(error?.code == .codingMismatch)
            #expect(error?.errorDescription == "Could not use collection \"events\": the items were written with "
                    + "\(RecordCoding.Strategies.default), and this repository reads and writes "
                    + "\(RecordCoding.Strategies(keys: .snakeCase)); nothing was changed.")
            #expect(error?.recoverySuggestion?.contains("raise the item version") == true)
        }
    }

    @Test func `put on a damaged store names the key`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "first", data: Data("1"))
            await store.close()
            try damageEveryPageButTheFirst(url)

            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "k", data: Data("2"))
            }
            #expect(error?.code == .corruptStore)
            #expect(error?.key == "k")
            #expect(error?.errorDescription?.hasPrefix("Could not save to collection \"c\" (key \"k\") in store \(url.path): "
                                                       + "the database file is damaged") == true)
        }
    }

    /// Overwrites every page after the first (which holds the header and schema) with 0xFF, so
    /// the store opens but its tables cannot be read.
    private func damageEveryPageButTheFirst(_ url: URL) throws {
        let handle = try FileHandle(forUpdating: url)
        defer {
            do { try handle.close() } catch { Issue.record("could not close \(url.path): \(error)") }
        }
        let size = try handle.seekToEnd()
        try #require(size > 4096)
        try handle.seek(toOffset: 4096)
        try handle.write(contentsOf: Data(repeating: 0xFF, count: Int(size) - 4096))
        try handle.synchronize()
    }
}
