import TestHelpers
import HarnessSupport
import CSQLite
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

/// Faults from outside the process: a full disk, an unwritable directory or store file, the
/// store file deleted or replaced while open, a failing commit. Each gives a clear
/// `RecordStoreError`, loses nothing confirmed, and the same `RecordStore` value works again
/// once the condition is fixed, without restarting the process.
@Suite struct FaultInjectionTests {
    // MARK: Full disk

    @Test(.enabled(if: SmallFilesystem.isAvailable, "needs root and a mountable tmpfs; the page-limit test below covers storageFull elsewhere"))
    func `a full disk gives storageFull, keeps every confirmed record, and the same store writes once there is space`() async throws {
        try await withTemporaryDirectory { directory in
            let mountPoint = directory.appendingPathComponent("small", isDirectory: true)
            try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
            try #require(SmallFilesystem.attach(at: mountPoint, megabytes: 2))
            defer { SmallFilesystem.detach(mountPoint) }
            let store = RecordStore(url: mountPoint.appendingPathComponent("store.sqlite"))
            var confirmed: [String: Data] = [:]
            var random = SplitMix64(seed: 42)
            var failure: RecordStoreError?
            var failedKey = ""
            var failedPayload = Data()
            for number in 0..<200 {
                let key = "k\(number)"
                let payload = random.bytes(48 * 1024)
                do {
                    try await store.put("fill", key: key, data: payload)
                    confirmed[key] = payload
                } catch let error as RecordStoreError {
                    (failure, failedKey, failedPayload) = (error, key, payload)
                    break
                }
            }
            let error = try #require(failure, "the 2 MB filesystem never filled up")
            FaultTally.shared.add("full disk (tmpfs ENOSPC)")
            #expect(error.code == .storageFull, "\(error)")
            #expect(error.operation == .put)
            // ENOSPC may strike while a statement spills pages (the key is named) or at the
            // commit, when the log is written (no single key to name).
            #expect(error.key == failedKey || error.key == nil)
            #expect(error.errorDescription?.contains("disk is full") == true)
            #expect(error.recoverySuggestion?.contains("committed records are intact") == true)
            // A multi-collection write fails the same way and leaves nothing behind.
            let big = random.bytes(512 * 1024)
            await #expect(throws: RecordStoreError.self) {
                try await store.write { tx in
                    try tx.put("other", key: "a", data: big)
                    try tx.put("fill", key: "k0", data: big)
                }
            }
            FaultTally.shared.add("full disk (tmpfs ENOSPC)")
            #expect(try await store.read("fill") == confirmed)
            #expect(try await store.read("other") == nil)

            #expect(SmallFilesystem.resize(mountPoint, megabytes: 64))
            try await store.put("fill", key: failedKey, data: failedPayload)
            confirmed[failedKey] = failedPayload
            #expect(try await store.read("fill") == confirmed)
            #expect(try await store.integrityCheck() == ["ok"])
            await store.close()
            #expect(try await store.read("fill") == confirmed)
            await store.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a database size limit fails every kind of write with storageFull and lifts cleanly`(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let store = kind.makeStore(at: directory.appendingPathComponent("limited.sqlite"))
            try await store.replace("a", values: ["one": Data("1"), "two": Data("2")])
            try await store.put("b", key: "three", data: Data("3"))
            let before = try await snapshot(store, ["a", "b", "c"])
            try await store.setMaxPageCountForTesting(try await store.info().pageCount)
            let big = Data(repeating: 0xAB, count: 200 * 1024)
            let attempts: [(String, @Sendable (RecordStore) async throws -> Void)] = [
                ("put", { try await $0.put("a", key: "big", data: big) }),
                ("apply", { try await $0.apply("a", changes: RecordChanges(upserts: ["big": big], removals: ["one"])) }),
                ("replace", { try await $0.replace("b", values: ["big": big]) }),
                ("write", { store in
                    try await store.write { tx in
                        try tx.removeCollection("a")
                        try tx.put("c", key: "big", data: big)
                    }
                }),
            ]
            for (name, attempt) in attempts {
                let error = await #expect(throws: RecordStoreError.self, "\(name)") { try await attempt(store) }
                #expect(error?.code == .storageFull, "\(name): \(String(describing: error))")
                #expect(try await snapshot(store, ["a", "b", "c"]) == before, "\(name) left something behind")
                FaultTally.shared.add("database size limit")
            }
            try await store.setMaxPageCountForTesting(1_000_000)
            for (_, attempt) in attempts { try await attempt(store) }
            #expect(try await store.read("c") == ["big": big])
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    // MARK: Unwritable directory and read-only file

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a store in an unwritable directory gives a clear error and opens once the directory is writable`() async throws {
        try await withTemporaryDirectory { directory in
            let locked = directory.appendingPathComponent("locked", isDirectory: true)
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            try #require(WriteProtection.protect(locked))
            defer { WriteProtection.unprotect(locked) }
            let url = locked.appendingPathComponent("store.sqlite")
            let store = RecordStore(url: url)
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "k", data: Data("1"))
            }
            FaultTally.shared.add("unwritable directory")
            // No store exists yet: what is read-only is the directory it would be made in.
            #expect(error?.code == .readOnly, "\(String(describing: error))")
            #expect(error?.path == url.path)
            #expect(error?.errorDescription?.contains(url.path) == true)
            #expect(error?.errorDescription?.contains("the directory \(locked.path) is not writable") == true,
                    "\(error?.errorDescription ?? "")")
            #expect(!FileManager.default.fileExists(atPath: url.path))

            WriteProtection.unprotect(locked)
            try await store.put("c", key: "k", data: Data("1"))
            #expect(try await store.value("c", key: "k") == Data("1"))

            // An existing store whose directory becomes unwritable before it is opened again.
            await store.close()
            try #require(WriteProtection.protect(locked))
            let reopenError = await #expect(throws: RecordStoreError.self) {
                try await store.put("c", key: "k2", data: Data("2"))
            }
            FaultTally.shared.add("unwritable directory")
            // The file is writable but its directory is not: the log (-wal) cannot be made.
            #expect(reopenError?.code == .readOnly, "\(String(describing: reopenError))")
            #expect(reopenError?.path == url.path)
            #expect(reopenError?.errorDescription?.contains("the directory \(locked.path) is not writable") == true,
                    "\(reopenError?.errorDescription ?? "")")
            WriteProtection.unprotect(locked)
            try await store.put("c", key: "k2", data: Data("2"))
            #expect(try await store.read("c") == ["k": Data("1"), "k2": Data("2")])
        }
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a read-only store file gives readOnly, stays readable, and the same store writes once it is writable`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("store.sqlite")
            let store = RecordStore(url: url)
            try await store.replace("c", values: ["confirmed": Data("1"), "also": Data("2")])
            await store.close()
            try #require(WriteProtection.protect(url))
            defer { WriteProtection.unprotect(url) }
            let bytes = try Data(contentsOf: url)

            // SQLite opens a file it cannot write read-only: reads work, writes are refused.
            #expect(try await store.read("c") == ["confirmed": Data("1"), "also": Data("2")])
            for attempt in 0..<2 {
                let error = await #expect(throws: RecordStoreError.self) {
                    try await store.put("c", key: "refused", data: Data("3"))
                }
                FaultTally.shared.add("read-only store file")
                #expect(error?.code == .readOnly, "attempt \(attempt): \(String(describing: error))")
                #expect(error?.recoverySuggestion?.contains("writable") == true)
            }
            #expect(try Data(contentsOf: url) == bytes)

            WriteProtection.unprotect(url)
            try await store.put("c", key: "after", data: Data("4"))
            let expected = ["confirmed": Data("1"), "also": Data("2"), "after": Data("4")]
            #expect(try await store.read("c") == expected)
            await store.close()
            #expect(try await store.read("c") == expected)
        }
    }

    // MARK: Failed commits

    @Test(arguments: StoreKind.allCases)
    func `a failed commit in every kind of write leaves everything as it was and a retry succeeds`(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let store = kind.makeStore(at: directory.appendingPathComponent("commit.sqlite"))
            try await store.replace("a", values: ["one": Data("1"), "two": Data("2")])
            try await store.put("b", key: "three", data: Data("3"))
            let writes: [(String, @Sendable (RecordStore) async throws -> Void)] = [
                ("put", { try await $0.put("a", key: "new", data: Data("n")) }),
                ("apply", { try await $0.apply("a", changes: RecordChanges(upserts: ["x": Data("x")], removals: ["one"])) }),
                ("conditional apply", { store in
                    let version = try await store.record("b", key: "three")?.version
                    try await store.apply("b", changes: RecordChanges(upserts: ["three": Data("3b")]), expecting: ["three": version])
                }),
                ("replace", { try await $0.replace("b", values: ["only": Data("o")]) }),
                ("write", { store in
                    try await store.write { tx in
                        try tx.put("a", key: "w", data: Data("w"))
                        try tx.removeCollection("b")
                        try tx.put("c", key: "w", data: Data("w"))
                    }
                }),
                ("removeCollection", { try await $0.removeCollection("a") }),
            ]
            for (name, write) in writes {
                let before = try await snapshot(store, ["a", "b", "c"])
                try await store.failNextCommitForTesting()
                let error = await #expect(throws: RecordStoreError.self, "\(name)") { try await write(store) }
                #expect(error?.code == .injectedFailure, "\(name)")
                #expect(error?.errorDescription?.contains("nothing was written") == true)
                #expect(try await snapshot(store, ["a", "b", "c"]) == before, "\(name) left something behind")
                FaultTally.shared.add("failed commit")
                try await write(store)
                #expect(try await snapshot(store, ["a", "b", "c"]) != before, "\(name) retry changed nothing")
            }
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }
}

/// The contents of some collections (nil for those not established).
private func snapshot(_ store: RecordStore, _ collections: [String]) async throws -> [String: [String: Data]?] {
    var result: [String: [String: Data]?] = [:]
    for collection in collections { result[collection] = .some(try await store.read(collection)) }
    return result
}
