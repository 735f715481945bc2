import Foundation
import TestHelpers
import Testing

@testable import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The watch that lets a commit skip the `stat` of the store path (see `StorePathWatch`): it
/// must report every change of an entry on the path, as given and with links resolved, and
/// nothing else. Where there is no watch (not Linux) every commit examines the path.
@Suite struct StorePathWatchTests {
    /// Makes `directory/outer/inner/store` (a file) and a watch of it.
    private func watchedFile(in directory: URL) throws -> (file: URL, watch: StorePathWatch?) {
        let inner = directory.appendingPathComponent("outer/inner", isDirectory: true)
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        let file = inner.appendingPathComponent("store")
        try Data("x".utf8).write(to: file)
        return (file, StorePathWatch.make(path: file.path))
    }

    @Test func `a watch reports nothing while only other names in the directories change`() throws {
        try withTemporaryDirectory { directory in
            let (file, made) = try watchedFile(in: directory)
            #if os(Linux)
                let watch = try #require(made)
                #expect(watch.isUnchanged())
                let inner = file.deletingLastPathComponent()
                try Data("y".utf8).write(to: inner.appendingPathComponent("store-wal"))
                try Data("y".utf8).write(to: directory.appendingPathComponent("outer/neighbour"))
                try FileManager.default.removeItem(at: inner.appendingPathComponent("store-wal"))
                #expect(watch.isUnchanged())
            #else
                #expect(made == nil)
            #endif
        }
    }

    @Test func `a watch reports the file moved, once`() throws {
        try withTemporaryDirectory { directory in
            let (file, watch) = try watchedFile(in: directory)
            guard let watch else { return }
            #expect(rename(file.path, file.path + "-aside") == 0)
            #expect(!watch.isUnchanged())
            #expect(watch.isUnchanged())
            #expect(rename(file.path + "-aside", file.path) == 0)
            #expect(!watch.isUnchanged())
        }
    }

    @Test func `a watch reports another file renamed over the path`() throws {
        try withTemporaryDirectory { directory in
            let (file, watch) = try watchedFile(in: directory)
            guard let watch else { return }
            let other = file.deletingLastPathComponent().appendingPathComponent("other")
            try Data("z".utf8).write(to: other)
            #expect(watch.isUnchanged())
            #expect(rename(other.path, file.path) == 0)
            #expect(!watch.isUnchanged())
        }
    }

    @Test func `a watch reports a directory above the file moved`() throws {
        try withTemporaryDirectory { directory in
            let (_, watch) = try watchedFile(in: directory)
            guard let watch else { return }
            let outer = directory.appendingPathComponent("outer")
            #expect(rename(outer.path, outer.path + "-moved") == 0)
            #expect(!watch.isUnchanged())
        }
    }

    @Test func `a watch through a symbolic link reports the link re-pointed and its target's directory moved`() throws {
        try withTemporaryDirectory { directory in
            let target = directory.appendingPathComponent("a/b", isDirectory: true)
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            try Data("x".utf8).write(to: target.appendingPathComponent("store"))
            let link = directory.appendingPathComponent("link")
            #expect(symlink(target.path, link.path) == 0)
            guard let watch = StorePathWatch.make(path: link.appendingPathComponent("store").path) else { return }
            #expect(watch.isUnchanged())
            #expect(unlink(link.path) == 0)
            #expect(symlink(target.path, link.path) == 0)
            #expect(!watch.isUnchanged())
            let a = directory.appendingPathComponent("a")
            #expect(rename(a.path, a.path + "-moved") == 0)
            #expect(!watch.isUnchanged())
        }
    }
}
