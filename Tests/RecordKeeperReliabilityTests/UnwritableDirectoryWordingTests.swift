import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// What a person reads when a store (or a backup's copy) cannot be created because its
/// directory is not writable.
@Suite struct UnwritableDirectoryWordingTests {
    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a new store in an unwritable directory says the directory is not writable`() async throws {
        try await withTemporaryDirectory { directory in
            let locked = directory.appendingPathComponent("locked", isDirectory: true)
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            try #require(WriteProtection.protect(locked))
            defer { WriteProtection.unprotect(locked) }
            let url = locked.appendingPathComponent("store.sqlite")
            let error = await #expect(throws: RecordStoreError.self) {
                try await RecordStore(url: url).put("c", key: "k", data: Data("1".utf8))
            }
            let description = try #require(error?.errorDescription)
            #expect(description.hasPrefix("Could not open the store at \(url.path): the store could not be created "
                                          + "because the directory \(locked.path) is not writable ("))
            #expect(!description.contains("the store is read-only"))
            #expect(!description.contains(".."))
            #expect(!FileManager.default.fileExists(atPath: url.path))
        }
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a missing subdirectory under an unwritable directory is one sentence with one period`() async throws {
        try await withTemporaryDirectory { directory in
            let locked = directory.appendingPathComponent("locked", isDirectory: true)
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            try #require(WriteProtection.protect(locked))
            defer { WriteProtection.unprotect(locked) }
            let sub = locked.appendingPathComponent("sub", isDirectory: true)
            let url = sub.appendingPathComponent("store.sqlite")
            let error = await #expect(throws: RecordStoreError.self) {
                try await RecordStore(url: url).put("c", key: "k", data: Data("1".utf8))
            }
            let description = try #require(error?.errorDescription)
            #expect(description.hasPrefix("Could not open the store at \(url.path): could not create the directory \(sub.path) ("))
            #expect(description.hasSuffix(")."))
            #expect(!description.contains(".."))
            #expect(!FileManager.default.fileExists(atPath: sub.path))
        }
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a backup into an unwritable directory names that directory, not the store's`() async throws {
        try await withTemporaryDirectory { directory in
            let store = RecordStore(url: directory.appendingPathComponent("records.sqlite"))
            try await store.put("c", key: "k", data: Data("1".utf8))
            let locked = directory.appendingPathComponent("locked", isDirectory: true)
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            try #require(WriteProtection.protect(locked))
            defer { WriteProtection.unprotect(locked) }
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.backup(to: locked.appendingPathComponent("copy.sqlite"))
            }
            #expect(error?.code == .readOnly)
            #expect(error?.detail?.hasPrefix("the copy could not be created because the directory \(locked.path) is not writable (") == true)
            #expect(error?.recoverySuggestion == "Choose a destination in a directory this user may write; nothing was written there.")
        }
    }
}
