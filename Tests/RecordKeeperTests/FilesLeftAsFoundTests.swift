import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// Files the store refuses stay as it found them, and what it cannot read is never "no
/// records": a newer format whose commits are still in the log, a log without its store file,
/// a store path that links to nothing, a migration that meets a newer one.
@Suite struct FilesLeftAsFoundTests {
    private func size(_ url: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
    }

    private func log(_ url: URL) -> URL { URL(fileURLWithPath: url.path + "-wal") }

    /// A closed store holding one record, `records.sqlite` in `directory`.
    private func storeWithOneRecord(in directory: URL) async throws -> URL {
        let url = directory.appendingPathComponent("records.sqlite")
        let store = RecordStore(url: url)
        try await store.put("c", key: "k", data: Data("v".utf8))
        await store.close()
        return url
    }

    @Test func `a newer format still in the log is refused by reads and writes, and neither the file nor its log changes`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let url = try await storeWithOneRecord(in: directory)
            // A newer version of the app migrated in the log and was killed before a checkpoint.
            try rawSQLite(url, "PRAGMA user_version = 99; CREATE TABLE newer (x)", keepingLog: true)
            let main = try Data(contentsOf: url)
            let logged = try Data(contentsOf: log(url))
            #expect(!logged.isEmpty)
            for request in [
                { (store: RecordStore) in _ = try await store.read("c") },
                { (store: RecordStore) in try await store.put("c", key: "other", data: Data("w".utf8)) },
            ] as [@Sendable (RecordStore) async throws -> Void] {
                let store = RecordStore(url: url)
                let error = await #expect(throws: RecordStoreError.self) { try await request(store) }
                #expect(error?.code == .newerFormat)
                await store.close()
                #expect(try Data(contentsOf: url) == main, "the main file is as it was: nothing checkpointed into it")
                #expect(try Data(contentsOf: log(url)) == logged, "the log keeps the newer version's commits")
            }
        }
    }

    @Test(arguments: [true, false])
    func `a log beside a missing or empty store file is refused by reads and writes, and nothing is created`(
        emptyFile: Bool
    ) async throws {
        try await withTemporaryDirectory { directory in
            let url = try await storeWithOneRecord(in: directory)
            // Commits only in the log, then the store file moved away (or truncated) without it.
            try rawSQLite(url, "INSERT INTO records (collection_id, key, payload, version) SELECT collection_id, 'late', payload, 1 FROM records", keepingLog: true)
            let logged = try Data(contentsOf: log(url))
            try FileManager.default.moveItem(at: url, to: directory.appendingPathComponent("moved.sqlite"))
            if emptyFile { #expect(FileManager.default.createFile(atPath: url.path, contents: Data())) }
            let store = RecordStore(url: url)
            for request in [
                { _ = try await store.read("c") },
                { try await store.put("c", key: "other", data: Data("w".utf8)) },
            ] as [@Sendable () async throws -> Void] {
                let error = await #expect(throws: RecordStoreError.self) { try await request() }
                #expect(error?.code == .cannotOpen)
                #expect(error?.detail?.contains("records.sqlite-wal holds \(logged.count) bytes") == true, "\(String(describing: error))")
            }
            await store.close()
            #expect(try Data(contentsOf: log(url)) == logged, "the log is untouched")
            #expect(size(url) == (emptyFile ? 0 : nil), "no store file was made")
        }
    }

    @Test func `a log of its header alone beside an empty store file holds no commit, and the store is made`() async throws {
        try await withTemporaryDirectory { directory in
            // What another connection creating the store at the same moment leaves for an instant.
            let url = directory.appendingPathComponent("records.sqlite")
            #expect(FileManager.default.createFile(atPath: url.path, contents: Data()))
            try Data(repeating: 0, count: 32).write(to: URL(fileURLWithPath: url.path + "-wal"))
            let store = RecordStore(url: url)
            try await store.put("c", key: "k", data: Data("v".utf8))
            #expect(try await store.read("c") == ["k": Data("v".utf8)])
            await store.close()
        }
    }

    @Test func `a store path that links to nothing is refused by reads and writes, and nothing is made where it points`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            for target in ["unmounted/volume/records.sqlite", "absent.sqlite"] {
                let url = directory.appendingPathComponent("link-\(target.count).sqlite")
                let pointed = directory.appendingPathComponent(target)
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: pointed.path)
                let store = RecordStore(url: url)
                let read = await #expect(throws: RecordStoreError.self) { _ = try await store.read("c") }
                #expect(read?.code == .cannotOpen)
                #expect(read?.detail?.contains("symbolic link to \(pointed.path), which does not exist") == true, "\(String(describing: read))")
                let write = await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "k", data: Data("v".utf8)) }
                #expect(write?.code == .cannotOpen)
                await store.close()
                #expect(!FileManager.default.fileExists(atPath: pointed.path))
            }
        }
    }

    @Test func `a migration that finds a newer format written meanwhile says how far the file went`() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("plain.sqlite")
            // Another connection took the file to version 5 while this one waited.
            try rawSQLite(url, "PRAGMA user_version = 5")
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(1))
            let steps = [
                Migration(version: 1, name: "one", sql: "CREATE TABLE one (x)"),
                Migration(version: 2, name: "two", sql: "CREATE TABLE two (x)"),
            ]
            let reached = try Migrator.run(steps, on: connection, from: 0, applicationID: 7)
            #expect(reached == 5)
            #expect(try connection.userVersion() == 5, "no step ran over the newer file")
        }
    }
}
