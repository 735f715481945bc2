import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A store path whose file is a symbolic link is the link's target: its `-wal`, `-shm` and
/// `-observers` files are the ones beside the target, as SQLite's own are, whichever path a
/// store was given.
@Suite struct SymbolicLinkStoreTests {
    /// `records.sqlite` in `real/`, and `link.sqlite` beside `real/` pointing at it by a
    /// relative path.
    private func linkedStore(in directory: URL) throws -> (target: URL, link: URL) {
        let real = directory.appendingPathComponent("real", isDirectory: true)
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        let target = real.appendingPathComponent("records.sqlite")
        let link = directory.appendingPathComponent("link.sqlite")
        #expect(symlink("real/records.sqlite", link.path) == 0)
        return (target, link)
    }

    @Test func `a store reached through a link is observed by a store at the target, and the other way round`() async throws {
        try await withTemporaryDirectory { directory in
            let (target, link) = try linkedStore(in: directory)
            try await RecordStore(url: target).put("c", key: "first", data: Data("0"))

            let throughLink = RecordStore(url: link)
            let atTarget = RecordStore(url: target)
            let linkStream = await throughLink.changes(in: "c")
            try await atTarget.put("c", key: "a", data: Data("1"))
            #expect(try await changes(of: linkStream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["a": Data("1")]))

            let targetStream = await atTarget.changes(in: "c")
            try await throughLink.put("c", key: "b", data: Data("2"))
            #expect(try await changes(of: targetStream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["b": Data("2")]))
        }
    }

    @Test func `the store's side files are made beside the link's target, never beside the link`() async throws {
        try await withTemporaryDirectory { directory in
            let (target, link) = try linkedStore(in: directory)
            let first = RecordStore(url: target)
            try await first.put("c", key: "first", data: Data("0"))
            await first.close()
            let store = RecordStore(url: link)
            try await store.put("c", key: "a", data: Data("1"))
            _ = await store.changes(in: "c")
            for suffix in ["-wal", "-shm", "-observers"] {
                #expect(FileManager.default.fileExists(atPath: target.path + suffix), "\(suffix)")
                #expect(!FileManager.default.fileExists(atPath: link.path + suffix), "\(suffix)")
            }
            #expect(try await store.read("c") == ["first": Data("0"), "a": Data("1")])
        }
    }

    @Test func `a chain of links is followed to the file`() async throws {
        try await withTemporaryDirectory { directory in
            let (target, link) = try linkedStore(in: directory)
            let second = directory.appendingPathComponent("second.sqlite")
            #expect(symlink(link.path, second.path) == 0)
            try await RecordStore(url: target).put("c", key: "first", data: Data("0"))
            try await RecordStore(url: second).put("c", key: "a", data: Data("1"))
            #expect(try await RecordStore(url: target).read("c") == ["first": Data("0"), "a": Data("1")])
            #expect(!FileManager.default.fileExists(atPath: second.path + "-observers"))
            #expect(RecordStore(url: second).path == target.path)
        }
    }

    @Test func `a link to nothing is still refused, named as given`() async throws {
        try await withTemporaryDirectory { directory in
            let link = directory.appendingPathComponent("link.sqlite")
            #expect(symlink(directory.appendingPathComponent("unmounted/records.sqlite").path, link.path) == 0)
            let store = RecordStore(url: link)
            let error = await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "a", data: Data("1")) }
            #expect(error?.code == .cannotOpen)
            #expect(error?.path == link.path)
            #expect(error?.detail?.contains("symbolic link") == true)
        }
    }

    @Test func `a loop of links is refused, and nothing is created`() async throws {
        try await withTemporaryDirectory { directory in
            let one = directory.appendingPathComponent("one.sqlite")
            let two = directory.appendingPathComponent("two.sqlite")
            #expect(symlink(two.path, one.path) == 0)
            #expect(symlink(one.path, two.path) == 0)
            let store = RecordStore(url: one)
            await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "a", data: Data("1")) }
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(names.sorted() == ["one.sqlite", "two.sqlite"])
        }
    }
}
