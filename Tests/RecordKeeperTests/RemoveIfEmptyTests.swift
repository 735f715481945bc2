import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// `RecordStore.removeIfEmpty`, the tool's undo of a store it created: the check and the
/// removal under the store's write lock, and connections that close without touching what
/// stands at the path by then.
@Suite struct RemoveIfEmptyTests {
    static let suffixes = ["", "-wal", "-shm", "-observers"]

    static func removeAll(_ path: String) {
        for suffix in suffixes { unlink(path + suffix) }
    }

    @Test func `a store holding a collection is left as it is`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "k", data: Data("1"))
            let called = Counter()
            #expect(try await store.removeIfEmpty { _ = called.increment() } == false)
            #expect(called.count == 0)
            #expect(try await store.read("c") == ["k": Data("1")])
            #expect(try await RecordStore(url: url).read("c") == ["k": Data("1")])
        }
    }

    @Test func `a store never opened, with no file, opens nothing and removes nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let called = Counter()
            let removed = try await RecordStore(url: url).removeIfEmpty { _ = called.increment() }
            #expect(removed)
            #expect(called.count == 0)
            let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(left == [])
        }
    }

    @Test func `when the writer cannot open, a blank database is removed and a store is kept`() async throws {
        try await withTemporaryDirectory { directory in
            let blank = directory.appendingPathComponent("blank.sqlite")
            #expect(FileManager.default.createFile(atPath: blank.path, contents: nil))
            // What an opening that failed early leaves: a WAL database, no schema, no format.
            try SQLiteConnection(path: blank.path, busyTimeout: .seconds(5)).execute("PRAGMA journal_mode=WAL")
            let kept = directory.appendingPathComponent("kept.sqlite")
            try await RecordStore(url: kept).write { _ in }  // a store with the format, no collection
            for (url, removable) in [(blank, true), (kept, false)] {
                // The opening fails again, as the command's own did (a full disk).
                let store = RecordStore(location: url, options: .init()) {
                    throw RecordStoreError(code: .ioError, operation: .open, path: url.path)
                }
                if removable {
                    #expect(try await store.removeIfEmpty { Self.removeAll(url.path) })
                    #expect(!FileManager.default.fileExists(atPath: url.path))
                } else {
                    let error = await #expect(throws: RecordStoreError.self) {
                        try await store.removeIfEmpty { Self.removeAll(url.path) }
                    }
                    #expect(error?.code == .ioError)
                    #expect(FileManager.default.fileExists(atPath: url.path))
                }
            }
        }
    }

    @Test func `a writer that opened the store before it was removed is refused, not committed into the removed file`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let created = RecordStore(url: url)
            try await created.write { _ in }  // creates the file, no collection
            let other = RecordStore(url: url)
            try await other.write { _ in }  // its writer has the file open
            #expect(try await created.removeIfEmpty { Self.removeAll(url.path) })
            #expect(!FileManager.default.fileExists(atPath: url.path))
            let error = await #expect(throws: RecordStoreError.self) { try await other.put("c", key: "k", data: Data("1")) }
            #expect(error?.code == .fileReplaced)
            #expect(!FileManager.default.fileExists(atPath: url.path), "nothing was reported saved, nothing is there")
        }
    }

    @Test func `a writer racing the removal either keeps the store or is refused`() async throws {
        try await withTemporaryDirectory { directory in
            for round in 0..<20 {
                let url = directory.appendingPathComponent("records-\(round).sqlite")
                let created = RecordStore(url: url)
                try await created.write { _ in }  // creates the file, no collection
                let other = RecordStore(url: url)
                try await other.write { _ in }  // its writer has the file open
                let put = Task { try await other.put("c", key: "k", data: Data("1")) }
                let removed = try await created.removeIfEmpty { Self.removeAll(url.path) }
                let outcome = await put.result
                switch outcome {
                case .success:
                    // It committed: the removal saw its collection and kept the store.
                    #expect(!removed, "round \(round)")
                    #expect(try await RecordStore(url: url).read("c") == ["k": Data("1")], "round \(round)")
                case .failure(let error):
                    #expect(removed, "round \(round)")
                    #expect((error as? RecordStoreError)?.code == .fileReplaced, "round \(round): \(error)")
                }
            }
        }
    }

    @Test func `closing after the removal leaves another store's files at the path alone`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let created = RecordStore(url: url)
            try await created.write { _ in }  // creates the file, no collection
            // Another program makes a new database at the path as soon as the files are gone,
            // and keeps it open: its commit is in its -wal only.
            let newcomer = Protected<SQLiteConnection?>(nil)
            #expect(try await created.removeIfEmpty {
                Self.removeAll(url.path)
                do {
                    guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                        Issue.record("could not create \(url.path)")
                        return
                    }
                    let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
                    try connection.execute("PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES (42)")
                    newcomer.withLock { $0 = connection }
                } catch {
                    Issue.record("the new database: \(error)")
                }
            })
            #expect(FileManager.default.fileExists(atPath: url.path + "-wal"), "the newcomer's log was not removed")
            let reader = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            let count = try reader.withQueryStatement("SELECT count(*) FROM t") { statement in
                _ = try statement.step()
                return statement.int64(at: 0)
            }
            #expect(count == 1)
            newcomer.withLock { $0 = nil }
        }
    }
}
