import TestHelpers
import Foundation
import Testing
import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The store file deleted, moved or replaced under an open store. SQLite would keep writing
/// through its open descriptor into a file nobody can open again; the store notices that the
/// file at its path is no longer the one it opened, refuses the commit with `fileReplaced`,
/// and opens whatever is at the path on the next request.
@Suite struct FileReplacementTests {
    @Test func `a store file deleted while open refuses the write and works again once the file is back`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("store.sqlite")
            let aside = directory.appendingPathComponent("aside", isDirectory: true)
            try FileManager.default.createDirectory(at: aside, withIntermediateDirectories: true)
            let store = RecordStore(url: url)
            try await store.replace("c", values: ["confirmed": Data("1"), "also": Data("2")])
            let moved = try moveStoreFiles(from: url, to: aside)

            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "after-delete", data: Data("3"))
            }
            FaultTally.shared.add("store file deleted while open")
            #expect(error?.code == .fileReplaced)
            #expect(error?.operation == .put)
            #expect(error?.errorDescription?.contains("deleted, moved or replaced") == true)
            #expect(error?.errorDescription?.contains("nothing was written") == true)

            // Put the file back: the same store value writes again and nothing confirmed is lost.
            for file in moved { try FileManager.default.moveItem(at: file, to: directory.appendingPathComponent(file.lastPathComponent)) }
            try await store.put("c", key: "after-restore", data: Data("4"))
            let expected = ["confirmed": Data("1"), "also": Data("2"), "after-restore": Data("4")]
            #expect(try await store.read("c") == expected)
            await store.close()
            #expect(try await RecordStore(url: url).read("c") == expected)
        }
    }

    @Test func `a store file replaced while open refuses the write and then uses the new file`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("store.sqlite")
            let otherURL = directory.appendingPathComponent("other.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "original", data: Data("1"))
            let other = RecordStore(url: otherURL)
            try await other.put("c", key: "replacement", data: Data("2"))
            await other.close()
            // Replace the file as a restore from backup would: the new file and no old log.
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.removeItem(atPath: url.path + suffix)
            }
            #expect(rename(otherURL.path, url.path) == 0)

            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "lost?", data: Data("3"))
            }
            FaultTally.shared.add("store file replaced while open")
            #expect(error?.code == .fileReplaced)
            #expect(error?.detail?.contains("another file") == true)
            // The next request opens the file now at the path, and writes land there.
            #expect(try await store.read("c") == ["replacement": Data("2")])
            try await store.put("c", key: "after", data: Data("4"))
            await store.close()
            #expect(try await RecordStore(url: url).read("c") == ["replacement": Data("2"), "after": Data("4")])
            // Open the writer again (a write; reads never open it) before the next replacement.
            try await store.put("c", key: "after", data: Data("4"))
            #expect(try await store.read("c")?.count == 2)

            // Replaced by something that is not a store: refused, and left byte for byte.
            let junk = Data("not a database, just some text that is long enough to be a header".utf8)
            try junk.write(to: directory.appendingPathComponent("junk"))
            #expect(rename(directory.appendingPathComponent("junk").path, url.path) == 0)
            let refused = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "x", data: Data("5"))
            }
            FaultTally.shared.add("store file replaced while open")
            #expect(refused?.code == .fileReplaced)
            let reopened = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
            #expect(reopened?.code == .notADatabase)
            #expect(try Data(contentsOf: url) == junk)
        }
    }

    @Test func `a store that finds its file replaced leaves the new file's log alone`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("store.sqlite")
            let otherURL = directory.appendingPathComponent("other.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "original", data: Data("1"))  // the writer: the old file's only connection
            // The old file goes; a new store is made at the path by another writer, whose
            // commits sit in its -wal (no checkpoint yet), and which stays open.
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.moveItem(atPath: url.path + suffix, toPath: otherURL.path + suffix)
            }
            let newcomer = RecordStore(url: url)
            try await newcomer.put("c", key: "new", data: Data("2"))
            #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))

            // The old store's next write finds the file replaced and lets its connection go. Its
            // close, as the old file's last, would checkpoint and delete "-wal" by name, the new
            // file's by now: SQLite skips that for a file moved from its path (its
            // databaseIsUnmoved check before the checkpoint on close), which this holds it to.
            let error = await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "x", data: Data("3")) }
            #expect(error?.code == .fileReplaced)
            _ = try await store.read("c")  // the reader moves to the new file too
            #expect(FileManager.default.fileExists(atPath: url.path + "-wal"), "the new file's log is still there")
            try await newcomer.put("c", key: "later", data: Data("4"))
            await newcomer.close()
            await store.close()
            #expect(try await RecordStore(url: url).read("c") == ["new": Data("2"), "later": Data("4")])
        }
    }

    // A commit examines the path only when a watch of its directories saw a change on it
    // (Linux; elsewhere always): these are the changes that touch a directory above the file.

    @Test func `a store whose directory is moved while open refuses the write and works again once it is back`() async throws {
        try await withTemporaryDirectory { directory in
            let folder = directory.appendingPathComponent("folder", isDirectory: true)
            let moved = directory.appendingPathComponent("folder-moved", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let url = folder.appendingPathComponent("store.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "confirmed", data: Data("1"))
            #expect(rename(folder.path, moved.path) == 0)

            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "lost?", data: Data("2"))
            }
            FaultTally.shared.add("store directory moved while open")
            #expect(error?.code == .fileReplaced)
            #expect(error?.detail == "the file is gone")

            #expect(rename(moved.path, folder.path) == 0)
            try await store.put("c", key: "after", data: Data("3"))
            #expect(try await store.read("c") == ["confirmed": Data("1"), "after": Data("3")])
        }
    }

    @Test func `a store reached through a symbolic link refuses the write once the link points elsewhere`() async throws {
        try await withTemporaryDirectory { directory in
            let real = directory.appendingPathComponent("real", isDirectory: true)
            let empty = directory.appendingPathComponent("empty", isDirectory: true)
            let link = directory.appendingPathComponent("link")
            for folder in [real, empty] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            #expect(symlink(real.path, link.path) == 0)
            let store = RecordStore(url: link.appendingPathComponent("store.sqlite"))
            try await store.put("c", key: "confirmed", data: Data("1"))
            #expect(unlink(link.path) == 0)
            #expect(symlink(empty.path, link.path) == 0)

            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "lost?", data: Data("2"))
            }
            FaultTally.shared.add("symbolic link of the store's directory re-pointed while open")
            #expect(error?.code == .fileReplaced)
            #expect(try await RecordStore(url: real.appendingPathComponent("store.sqlite")).read("c") == ["confirmed": Data("1")])
        }
    }

    @Test func `a store reached through a symbolic link refuses the write once the directory it points into is moved`() async throws {
        try await withTemporaryDirectory { directory in
            let outer = directory.appendingPathComponent("outer", isDirectory: true)
            let real = outer.appendingPathComponent("real", isDirectory: true)
            let link = directory.appendingPathComponent("link")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            #expect(symlink(real.path, link.path) == 0)
            let store = RecordStore(url: link.appendingPathComponent("store.sqlite"))
            try await store.put("c", key: "confirmed", data: Data("1"))
            // The link and the store's own directory stay as they are; a directory above the
            // link's target moves, so the link no longer leads to the file.
            #expect(rename(outer.path, directory.appendingPathComponent("outer-moved").path) == 0)

            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "lost?", data: Data("2"))
            }
            FaultTally.shared.add("directory above a symbolic link's target moved while open")
            #expect(error?.code == .fileReplaced)
            #expect(error?.detail == "the file is gone")
        }
    }

    @Test func `many commits in a row into an unchanged file all land`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("store.sqlite")
            let store = RecordStore(url: url)
            // Other files come and go beside the store: they name nothing on its path.
            for index in 0..<50 {
                try Data("x".utf8).write(to: directory.appendingPathComponent("neighbour-\(index)"))
                try await store.put("c", key: "k\(index)", data: Data("\(index)".utf8))
            }
            await store.close()
            #expect(try await RecordStore(url: url).read("c")?.count == 50)
        }
    }
}

/// Moves a store file and its log files into `directory`; returns where they went.
private func moveStoreFiles(from url: URL, to directory: URL) throws -> [URL] {
    var moved: [URL] = []
    for suffix in ["", "-wal", "-shm"] {
        let source = URL(fileURLWithPath: url.path + suffix)
        guard FileManager.default.fileExists(atPath: source.path) else { continue }
        let destination = directory.appendingPathComponent(source.lastPathComponent)
        try FileManager.default.moveItem(at: source, to: destination)
        moved.append(destination)
    }
    return moved
}
