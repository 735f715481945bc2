import Foundation
import Testing
@testable import RecordKeeper
import TestHelpers

private struct Feed: Codable, Equatable, Sendable {
    var title: String
    var items: [String]
}

private struct Unrelated: Codable, Sendable {
    var count: Int
}

@Suite struct SnapshotCacheTests {
    @Test func `values of any Codable type load back with the time they were saved`() async throws {
        try await withTemporaryDirectory { directory in
            let cache = SnapshotCache(directory: directory.appendingPathComponent("cache"))
            let before = Date()
            try await cache.save(Feed(title: "News", items: ["a", "b"]), forKey: "feed")
            try await cache.save(["x", "y"], forKey: "list")
            try await cache.save(42, forKey: "answer")
            let after = Date()

            let feed = try #require(try await cache.load(Feed.self, forKey: "feed"))
            #expect(feed.value == Feed(title: "News", items: ["a", "b"]))
            #expect(feed.savedAt >= before && feed.savedAt <= after)
            #expect(try await cache.load([String].self, forKey: "list")?.value == ["x", "y"])
            #expect(try await cache.load(Int.self, forKey: "answer")?.value == 42)

            try await cache.save(Feed(title: "Later", items: []), forKey: "feed")
            #expect(try await cache.load(Feed.self, forKey: "feed")?.value.title == "Later")
        }
    }

    @Test func `nil means never saved or removed, and creating or reading a cache writes nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let cacheDirectory = directory.appendingPathComponent("cache")
            let cache = SnapshotCache(directory: cacheDirectory)
            #expect(try await cache.load(Feed.self, forKey: "feed") == nil)
            try await cache.remove(forKey: "feed")
            try await cache.removeAll()
            #expect(!FileManager.default.fileExists(atPath: cacheDirectory.path))

            try await cache.save(Feed(title: "News", items: []), forKey: "feed")
            try await cache.save(Feed(title: "Other", items: []), forKey: "other")
            try await cache.remove(forKey: "feed")
            #expect(try await cache.load(Feed.self, forKey: "feed") == nil)
            #expect(try await cache.load(Feed.self, forKey: "other")?.value.title == "Other")
            try await cache.removeAll()
            #expect(try await cache.load(Feed.self, forKey: "other") == nil)
        }
    }

    @Test func `files are private to the user and the directory the cache creates is too`() async throws {
        try await withTemporaryDirectory { directory in
            let cacheDirectory = directory.appendingPathComponent("a/b/cache")
            let cache = SnapshotCache(directory: cacheDirectory)
            try await cache.save("value", forKey: "key")
            #expect(try permissions(of: cacheDirectory) == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path)
            #expect(files.count == 1)
            #expect(try permissions(of: cacheDirectory.appendingPathComponent(files[0])) == 0o600)
        }
    }

    @Test func `a save interrupted before its rename leaves the previous snapshot whole`() async throws {
        try await withTemporaryDirectory { directory in
            struct Crash: Error {}
            let cacheDirectory = directory.appendingPathComponent("cache")
            try await SnapshotCache(directory: cacheDirectory).save(Feed(title: "Old", items: ["1"]), forKey: "feed")
            let destination = cacheDirectory.appendingPathComponent(SnapshotCache.fileName(forKey: "feed"))
            let oldBytes = try Data(contentsOf: destination)

            let seen = Counter()
            let cache = SnapshotCache(directory: cacheDirectory) { temporary, target in
                // The new snapshot is complete in a private file beside the old one, which is
                // still the old one.
                _ = seen.increment()
                #expect(temporary.deletingLastPathComponent().path == cacheDirectory.path)
                #expect(target.path == destination.path)
                #expect(try permissions(of: temporary) == 0o600)
                #expect(try Data(contentsOf: target) == oldBytes)
                let header = try RecordCoding.decode(SnapshotHeader.self, from: Data(contentsOf: temporary))
                #expect(header.key == "feed")
                throw Crash()
            }
            let error = await #expect(throws: SnapshotCacheError.self) {
                try await cache.save(Feed(title: "New", items: ["2"]), forKey: "feed")
            }
            #expect(error?.code == .cannotWrite)
            #expect(error?.underlying is Crash)
            #expect(seen.count == 1)
            #expect(try Data(contentsOf: destination) == oldBytes)
            #expect(try await cache.load(Feed.self, forKey: "feed")?.value.title == "Old")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path) == [destination.lastPathComponent])
        }
    }

    @Test func `a temporary file left by a crash is ignored by load and removed by removeAll, other files stay`() async throws {
        try await withTemporaryDirectory { directory in
            let cacheDirectory = directory.appendingPathComponent("cache")
            let cache = SnapshotCache(directory: cacheDirectory)
            try await cache.save("kept", forKey: "key")
            let leftover = cacheDirectory.appendingPathComponent(SnapshotCache.temporaryPrefix + "crashed")
            try Data("{\"format\":1,\"ke".utf8).write(to: leftover)
            let unrelated = cacheDirectory.appendingPathComponent("notes.txt")
            try Data("mine".utf8).write(to: unrelated)

            #expect(try await cache.load(String.self, forKey: "key")?.value == "kept")
            try await cache.removeAll()
            #expect(try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path) == ["notes.txt"])
            #expect(try Data(contentsOf: unrelated) == Data("mine".utf8))
        }
    }

    @Test func `no key escapes the directory or shares a file with another key`() async throws {
        try await withTemporaryDirectory { directory in
            let cacheDirectory = directory.appendingPathComponent("cache")
            let cache = SnapshotCache(directory: cacheDirectory)
            let long = String(repeating: "k", count: 5000)
            let keys = [
                "../x", "../../etc/passwd", "/etc/passwd", ".", "..", "", "a/b", "a\\b", "a\u{0}b",
                "Key", "key", "KEY", "caf\u{E9}", "cafe\u{301}", "\u{1F40B} whale", "h-abc", "k-00",
                "con", "nul.txt", String(repeating: "x", count: 100), String(repeating: "x", count: 101),
                long, long + "!", String(repeating: "\u{00E9}", count: 3000),
            ]
            for (index, key) in keys.enumerated() {
                try await cache.save(index, forKey: key)
            }
            for (index, key) in keys.enumerated() {
                #expect(try await cache.load(Int.self, forKey: key)?.value == index, "key \(key.prefix(20))")
            }
            // Exactly one file per key, all directly inside the directory, and nothing outside it.
            let files = try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path)
            #expect(files.count == keys.count)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["cache"])
            let allowed = Set("0123456789abcdefhk-.snapshot".utf8)
            for file in files {
                #expect(file.utf8.count <= 255)
                #expect(file.utf8.allSatisfy(allowed.contains), "\(file)")
                #expect(file != "." && file != "..")
            }
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("x").path))
        }
    }

    @Test func `a damaged or undecodable snapshot is an error naming its key, never nil`() async throws {
        try await withTemporaryDirectory { directory in
            let cacheDirectory = directory.appendingPathComponent("cache")
            let cache = SnapshotCache(directory: cacheDirectory)
            let key = "https://example.com/feed.json"
            let file = cacheDirectory.appendingPathComponent(SnapshotCache.fileName(forKey: key))
            try await cache.save(Feed(title: "News", items: ["a"]), forKey: key)
            let whole = try Data(contentsOf: file)

            func expectFailure(_ code: SnapshotCacheError.Code, _ comment: Comment) async {
                let error = await #expect(throws: SnapshotCacheError.self, comment) {
                    try await cache.load(Feed.self, forKey: key)
                }
                #expect(error?.code == code, comment)
                #expect(error?.key == key, comment)
                #expect(error?.operation == "load", comment)
                #expect(error.map { String(describing: $0).contains("\"\(key)\"") } == true, comment)
                #expect(error?.errorDescription?.contains(key) == true, comment)
            }

            try whole.prefix(whole.count / 2).write(to: file)
            await expectFailure(.corruptSnapshot, "truncated")
            try Data().write(to: file)
            await expectFailure(.corruptSnapshot, "empty")
            try Data("\u{0}\u{1}garbage".utf8).write(to: file)
            await expectFailure(.corruptSnapshot, "garbage")
            try Data(whole).write(to: file)
            let wrongType = await #expect(throws: SnapshotCacheError.self) {
                try await cache.load(Unrelated.self, forKey: key)
            }
            #expect(wrongType?.code == .undecodableValue)
            #expect(wrongType?.key == key)

            // Another key's snapshot moved under this key's name is caught by the stored key.
            try await cache.save(Feed(title: "Other", items: []), forKey: "other")
            try FileManager.default.removeItem(at: file)
            try FileManager.default.copyItem(
                at: cacheDirectory.appendingPathComponent(SnapshotCache.fileName(forKey: "other")), to: file)
            await expectFailure(.corruptSnapshot, "another key's snapshot")

            // A directory in the file's place cannot be read.
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
            await expectFailure(.cannotRead, "a directory")
        }
    }

    @Test func `a cache directory path that is a file fails every operation with an error`() async throws {
        try await withTemporaryDirectory { directory in
            let blocker = directory.appendingPathComponent("cache")
            try Data("a file".utf8).write(to: blocker)
            let cache = SnapshotCache(directory: blocker)
            let saved = await #expect(throws: SnapshotCacheError.self) { try await cache.save(1, forKey: "k") }
            #expect(saved?.code == .cannotWrite)
            let loaded = await #expect(throws: SnapshotCacheError.self) { try await cache.load(Int.self, forKey: "k") }
            #expect(loaded?.code == .cannotRead)
            #expect(loaded?.key == "k")
            await #expect(throws: SnapshotCacheError.self) { try await cache.removeAll() }
            #expect(try Data(contentsOf: blocker) == Data("a file".utf8))
        }
    }

    @Test func `concurrent saves of one key leave one whole snapshot`() async throws {
        try await withTemporaryDirectory { directory in
            let cache = SnapshotCache(directory: directory.appendingPathComponent("cache"))
            await withThrowingTaskGroup { group in
                for index in 0..<20 {
                    group.addTask { try await cache.save(Feed(title: "\(index)", items: ["\(index)"]), forKey: "feed") }
                }
            }
            let feed = try #require(try await cache.load(Feed.self, forKey: "feed"))
            #expect(feed.value.items == [feed.value.title])
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("cache").path).count == 1)
        }
    }

    @Test func `SHA-256 gives the standard digests`() {
        #expect(SHA256.hexDigest(Array("".utf8)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexDigest(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hexDigest([UInt8](repeating: 0x61, count: 1000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }
}
