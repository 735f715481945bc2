import TestHelpers
import Foundation
import RecordKeeper
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Another user's store, which this user may read but not write (a 0644 file in a 0755
/// directory of its owner): reading commands work, writes say read-only, and a store this user
/// may not read at all says "cannot read".
@Suite struct ReadOnlyStoreToolTests {
    /// A store of root's with two records, in a directory other users may enter and read but
    /// not write; `body` gets a runner that runs the tool as `nobody`.
    func withOthersStore(
        mode: mode_t, directoryMode: mode_t = 0o755, _ body: (ToolRunner, URL) async throws -> Void
    ) async throws {
        let user = try #require(OtherUser.nobody)
        try await withTemporaryDirectory { directory in
            let shared = directory.appendingPathComponent("shared", isDirectory: true)
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
            let owner = ToolRunner(directory: shared)
            #expect(try await owner.runOnStore(["put", "notes", "today", #""milk""#]).status == 0)
            #expect(try await owner.runOnStore(["put", "notes", "later", #""bread""#]).status == 0)
            #expect(chmod(directory.path, 0o755) == 0)
            #expect(chmod(shared.path, directoryMode) == 0)
            #expect(chmod(owner.storePath, mode) == 0)
            var runner = ToolRunner(directory: shared)
            runner.user = user
            try await body(runner, shared)
        }
    }

    @Test(.enabled(if: OtherUser.nobody != nil, OtherUser.unavailableReason))
    func `another user reads a store it may only read, and its write says read-only`() async throws {
        try await withOthersStore(mode: 0o644) { tool, directory in
            let before = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            let got = try await tool.runOnStore(["get", "notes", "today"])
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.output == "\"milk\"\n")
            let listed = try await tool.runOnStore(["list", "notes", "--values"])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.outputLines.count == 2)
            let exported = try await tool.runOnStore(["export"])
            #expect(exported.status == 0, "\(exported.stderr)")
            // An export into the directory this user may not write names the directory.
            let unwritable = try await tool.runOnStore(["export", "--output", directory.appendingPathComponent("e.json").path])
            #expect(unwritable.status == 74, "\(unwritable.stderr)")
            #expect(unwritable.stderr.contains("the directory \(directory.path) is not writable"), "\(unwritable.stderr)")
            #expect(!unwritable.stderr.contains(".partial-"), "\(unwritable.stderr)")
            #expect(try await tool.runOnStore(["collections"]).status == 0)

            let put = try await tool.runOnStore(["put", "notes", "today", #""eggs""#])
            #expect(put.status == 74)
            #expect(put.stderr.contains("read-only"), "\(put.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == before)
        }
    }

    @Test(.enabled(if: OtherUser.nobody != nil, OtherUser.unavailableReason))
    func `info on a store the user may only read reports the file's journal mode`() async throws {
        try await withOthersStore(mode: 0o444) { tool, _ in
            // Read through an immutable connection (no -shm can be made), whose own mode is
            // "delete": the file itself is in WAL mode, as `sqlite3 file 'PRAGMA journal_mode'` says.
            let info = try await tool.runOnStore(["info"])
            #expect(info.status == 0, "\(info.stderr)")
            #expect(info.outputLines.contains("journal mode: wal"), "\(info.output)")
        }
    }

    @Test(.enabled(if: OtherUser.nobody != nil, OtherUser.unavailableReason))
    func `a store the user may not read at all says cannot read`() async throws {
        try await withOthersStore(mode: 0o600) { tool, _ in
            let got = try await tool.runOnStore(["get", "notes", "today"])
            #expect(got.status == 74)
            #expect(got.stderr.hasPrefix("recordkeeper: "))
            #expect(got.stderr.contains("cannot read"), "\(got.stderr)")
            #expect(!got.stderr.contains("writable"), "\(got.stderr)")
            // A write says the same, not something about the directory.
            let put = try await tool.runOnStore(["put", "notes", "today", #""eggs""#])
            #expect(put.status == 74)
            #expect(put.stderr.contains("cannot read the store file (Permission denied)"), "\(put.stderr)")
        }
    }

    @Test(.enabled(if: OtherUser.nobody != nil, OtherUser.unavailableReason))
    func `a read-only store file in a directory the user may write leaves nothing beside it, and is written once writable`() async throws {
        try await withOthersStore(mode: 0o444, directoryMode: 0o777) { tool, directory in
            let before = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            let got = try await tool.runOnStore(["get", "notes", "today"])
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.output == "\"milk\"\n")
            let put = try await tool.runOnStore(["put", "notes", "today", #""eggs""#])
            #expect(put.status == 74)
            #expect(put.stderr.contains("the store file is read-only here (Permission denied)"), "\(put.stderr)")
            // No -wal or -shm of the file's mode was left to refuse the writes below.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == before)
            #expect(chmod(tool.storePath, 0o666) == 0)
            let again = try await tool.runOnStore(["put", "notes", "today", #""eggs""#])
            #expect(again.status == 0, "\(again.stderr)")
        }
    }

    @Test(.enabled(if: OtherUser.nobody != nil, OtherUser.unavailableReason))
    func `another user reads the commits its owner's open store holds in the log`() async throws {
        let user = try #require(OtherUser.nobody)
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("store.sqlite")
            let owner = RecordStore(url: url)
            try await owner.put("notes", key: "today", data: Data(#""milk""#.utf8))
            try await owner.put("notes", key: "today", data: Data(#""eggs""#.utf8))  // in the -wal
            #expect(chmod(directory.path, 0o755) == 0)
            for suffix in ["", "-wal", "-shm"] { #expect(chmod(url.path + suffix, 0o644) == 0) }
            var tool = ToolRunner(directory: directory)
            tool.user = user
            let got = try await tool.run(["get", "notes", "today", "--store", url.path])
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.output == "\"eggs\"\n")
            await owner.close()
        }
    }

    @Test(.enabled(if: OtherUser.nobody != nil, OtherUser.unavailableReason))
    func `commits in a log whose index the user cannot open are not silently skipped`() async throws {
        let user = try #require(OtherUser.nobody)
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("store.sqlite")
            let owner = RecordStore(url: url)
            try await owner.put("notes", key: "today", data: Data(#""milk""#.utf8))
            try await owner.put("notes", key: "today", data: Data(#""eggs""#.utf8))
            #expect(chmod(directory.path, 0o755) == 0)
            for suffix in ["", "-wal"] { #expect(chmod(url.path + suffix, 0o644) == 0) }
            #expect(chmod(url.path + "-shm", 0o600) == 0)
            var tool = ToolRunner(directory: directory)
            tool.user = user
            let got = try await tool.run(["get", "notes", "today", "--store", url.path])
            // An error naming the log, never the older "milk" of the main file.
            #expect(got.status == 74)
            #expect(got.output.isEmpty)
            #expect(got.stderr.contains("store.sqlite-wal holds commits"), "\(got.stderr)")
            await owner.close()
        }
    }
}
