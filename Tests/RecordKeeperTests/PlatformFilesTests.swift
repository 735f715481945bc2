import TestHelpers
import CSQLite
import Foundation
import Testing
@testable import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What each platform gets from `Durability` and `FileProtection`, and the error for protected
/// data that is not available (see docs/RELIABILITY.md). The Apple-only halves run on the macOS
/// and iOS runners of `.github/workflows/apple.yml`; here they are the "no effect" halves.
@Suite struct PlatformFilesTests {
    /// True where SQLite and the library's own syncs use `F_FULLFSYNC`.
    static let darwin = FileSync.isFullFsync

    @Test(arguments: Durability.allCases)
    func `every connection of a store asks for F_FULLFSYNC exactly on Apple platforms`(durability: Durability) async throws {
        try await withStore(.onDisk, options: .init(durability: durability)) { store, _ in
            try await store.put("c", key: "k", data: Data("v"))
            let writer = try store.core.writer.withLock { state in try state.connection?.fullFsyncFlags() }
            let reader = try await store.info()
            // full: every sync is F_FULLFSYNC there; normal: the checkpoints' syncs.
            #expect(writer?.fullfsync == (Self.darwin && durability == .full))
            #expect(writer?.checkpointFullfsync == Self.darwin)
            #expect(reader.fullFsync == (Self.darwin && durability == .full))
        }
    }

    @Test func `the file sync helper syncs an open file and says why it cannot`() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("f").path
            let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0)
            #expect(write(descriptor, "x", 1) == 1)
            #expect(FileSync.synchronize(descriptor))
            close(descriptor)
            // Never a closed descriptor's number: another test's thread may be given it at once.
            #expect(!FileSync.synchronize(-1))
            #expect(errno == EBADF)
        }
    }

    @Test(arguments: FileProtection.allCases)
    func `a store with a file protection class works, and where data protection does not exist nothing changes`(
        protection: FileProtection
    ) async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("nested/records.sqlite")
            let store = RecordStore(url: url, options: .init(fileProtection: protection))
            try await store.put("c", key: "k", data: Data("v"))
            #expect(try await store.read("c") == ["k": Data("v")])
            let backup = directory.appendingPathComponent("backup.sqlite")
            try await store.backup(to: backup)
            let cache = SnapshotCache(directory: directory.appendingPathComponent("cache"), fileProtection: protection)
            try await cache.save("value", forKey: "key")
            #expect(try await cache.load(String.self, forKey: "key")?.value == "value")
            #if !targetEnvironment(simulator)
                // (A simulator does not implement data protection: only a device shows classes.)
                for path in [url.path, url.path + "-wal", backup.path] {
                    #expect(ProtectedData.protection(ofFileOrDirectory: path) == Self.expectedClass(protection), "\(path)")
                }
            #endif
            await store.close()
        }
    }

    /// What a file created with `protection` reads back as: the class where data protection
    /// exists (the app's default for `systemDefault`, unknown here), nothing elsewhere.
    private static func expectedClass(_ protection: FileProtection) -> FileProtection? {
        guard FileProtection.isEffective, protection != .systemDefault else { return nil }
        return protection
    }

    @Test func `EPERM means protected data only for a file whose class locks`() {
        #expect(ProtectedData.isUnavailable(errno: EPERM, protection: .complete))
        #expect(ProtectedData.isUnavailable(errno: EPERM, protection: .completeUnlessOpen))
        #expect(ProtectedData.isUnavailable(errno: EPERM, protection: .completeUntilFirstUserAuthentication))
        #expect(!ProtectedData.isUnavailable(errno: EPERM, protection: FileProtection.none))
        #expect(!ProtectedData.isUnavailable(errno: EPERM, protection: nil), "an unknown class is not protection")
        #expect(!ProtectedData.isUnavailable(errno: EACCES, protection: .complete), "permissions are not protection")
        #expect(!ProtectedData.isUnavailable(errno: EROFS, protection: .complete))
    }

    @Test func `where data protection does not exist an EPERM failure keeps its meaning`() throws {
        guard !FileProtection.isEffective else { return }
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("records.sqlite").path
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let failure = SQLiteFailure(code: SQLITE_CANTOPEN, message: "unable to open database file", systemErrno: EPERM)
            #expect(RecordStoreError(failure, operation: .open, path: path).code == .cannotOpen)
            let cacheError = SnapshotCacheError(.cannotRead, operation: "load", key: "k", path: path, systemError: EPERM)
            #expect(cacheError.code == .cannotRead)
        }
    }

    @Test func `the protected-data error says the device is locked and to retry after unlocking`() {
        let error = RecordStoreError(code: .protectedDataUnavailable, operation: .read, collection: "notes", path: "/data/records.sqlite")
        #expect(error.localizedDescription
                == "Could not read collection \"notes\" in store /data/records.sqlite: the store's files are protected while the device is locked.")
        #expect(error.recoverySuggestion?.hasPrefix("Retry after the device is unlocked") == true)
        #expect(error.code != .readOnly)
    }
}
