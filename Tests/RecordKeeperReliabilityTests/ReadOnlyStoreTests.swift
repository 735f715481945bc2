import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// A store the process may read but not write — in a directory it cannot write, or on
/// read-only media — is read like any other; writes to it fail with `readOnly`, and nothing is
/// created beside it.
@Suite struct ReadOnlyStoreTests {
    /// A closed store with records in `directory` (no `-wal` or `-shm` left).
    static func makeStore(in directory: URL) async throws -> URL {
        let url = directory.appendingPathComponent("store.sqlite")
        let store = RecordStore(url: url)
        try await store.replace("c", values: ["a": Data("1".utf8), "b": Data("2".utf8)])
        try await store.put("d", key: "x", data: Data("3".utf8))
        await store.close()
        return url
    }

    /// Reads through every kind of reading request, then a write that must fail `readOnly`;
    /// the directory's listing stays as it was.
    static func checkReadOnly(_ url: URL) async throws {
        let directory = url.deletingLastPathComponent()
        let before = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        let failures = Protected<[RecordStoreError]>([])
        let store = RecordStore(url: url, options: .init(eventHandler: { event in
            if case .changeObservationFailed(let error) = event { failures.withLock { $0.append(error) } }
        }))
        // A change stream can be taken and positioned.
        let stream = await store.changes(in: "c")
        _ = stream
        #expect(try await store.read("c") == ["a": Data("1".utf8), "b": Data("2".utf8)])
        #expect(try await store.value("d", key: "x") == Data("3".utf8))
        #expect(try await store.record("c", key: "b")?.data == Data("2".utf8))
        #expect(try await store.collections().map(\.name) == ["c", "d"])
        #expect(try await store.read("missing") == nil)
        let error = await #expect(throws: RecordStoreError.self) {
            try await store.put("c", key: "refused", data: Data("4".utf8))
        }
        #expect(error?.code == .readOnly, "\(String(describing: error))")
        // Reads go on after the refused write.
        #expect(try await store.read("c")?.count == 2)
        #expect(failures.withLock { $0 }.isEmpty)
        await store.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == before)
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a store in a directory the process cannot write is read, and a write says read-only`() async throws {
        try await withTemporaryDirectory { directory in
            let locked = directory.appendingPathComponent("locked", isDirectory: true)
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            let url = try await Self.makeStore(in: locked)
            try #require(WriteProtection.protect(locked))
            defer { WriteProtection.unprotect(locked) }
            try await Self.checkReadOnly(url)
        }
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a write-protected store in a write-protected directory is read`() async throws {
        try await withTemporaryDirectory { directory in
            let locked = directory.appendingPathComponent("locked", isDirectory: true)
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            let url = try await Self.makeStore(in: locked)
            try #require(WriteProtection.protect(url))
            defer { WriteProtection.unprotect(url) }
            try #require(WriteProtection.protect(locked))
            defer { WriteProtection.unprotect(locked) }
            try await Self.checkReadOnly(url)
        }
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a write-protected store in a writable directory is read, leaves nothing beside it, and is written once writable`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try await Self.makeStore(in: directory)
            try #require(WriteProtection.protect(url))
            defer { WriteProtection.unprotect(url) }
            // checkReadOnly also checks that the directory lists no -wal or -shm afterwards:
            // left with the file's mode, they would refuse writes once the file is writable.
            try await Self.checkReadOnly(url)
            WriteProtection.unprotect(url)
            let store = RecordStore(url: url)
            try await store.put("c", key: "later", data: Data("5".utf8))
            #expect(try await store.read("c")?.count == 3)
            await store.close()
        }
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a write beside an unwritable -shm file names that file, not the store or its directory`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try await Self.makeStore(in: directory)
            // What a read of the store leaves when the store file itself was read-only.
            let shm = URL(fileURLWithPath: url.path + "-shm")
            try Data().write(to: shm)
            try #require(WriteProtection.protect(shm))
            defer { WriteProtection.unprotect(shm) }
            let store = RecordStore(url: url)
            let error = await #expect(throws: RecordStoreError.self) { try await store.put("d", key: "y", data: Data("4".utf8)) }
            #expect(error?.code == .readOnly, "\(String(describing: error))")
            #expect(error?.errorDescription?.contains("\(shm.path) is not writable") == true, "\(error?.errorDescription ?? "-") / \(error?.sqliteMessage ?? "-") / \(String(describing: error?.sqliteCode))")
            #expect(error?.recoverySuggestion?.contains("-shm") == true, "\(String(describing: error?.recoverySuggestion))")
            await store.close()
        }
    }

    @Test(.enabled(if: SmallFilesystem.isAvailable, "needs root and a mountable tmpfs for read-only media"))
    func `a store on read-only media is read, and a write says read-only`() async throws {
        try await withTemporaryDirectory { directory in
            let mountPoint = directory.appendingPathComponent("media", isDirectory: true)
            try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
            try #require(SmallFilesystem.attach(at: mountPoint, megabytes: 4))
            defer { SmallFilesystem.detach(mountPoint) }
            let url = try await Self.makeStore(in: mountPoint)
            try #require(SmallFilesystem.remount(mountPoint, readOnly: true))
            try await Self.checkReadOnly(url)
            #expect(SmallFilesystem.remount(mountPoint, readOnly: false))
        }
    }
}
