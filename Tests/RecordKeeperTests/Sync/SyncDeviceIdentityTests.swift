import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// A device id belongs to one store file: a copy (`backup(to:)`, a copied file, a restore)
/// never writes as the device it was copied from, so a concurrent edit of the copy and the
/// original is a reported conflict, never a silent overwrite, and both keep syncing.
@Suite struct SyncDeviceIdentityTests {
    /// Two stores on one server: `original` synced with a record at version 1.
    private func synced(_ original: RecordStore, server: any RecordSyncServer) async throws -> RecordSync {
        let sync = RecordSync(store: original, server: server)
        try await sync.start(space: "s", collections: ["notes"])
        try await original.put("notes", key: "shared", data: Data("base"))
        _ = try await sync.sync()
        return sync
    }

    @Test(arguments: StoreKind.allCases)
    func `a copy made by backup syncs as a new device, and the same record written on both is a reported conflict`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { original, url in
            let server = InMemorySyncServer()
            let originalSync = try await synced(original, server: server)
            let copyURL = url.deletingLastPathComponent().appendingPathComponent("copy.sqlite")
            try await original.backup(to: copyURL)
            let copy = RecordStore(url: copyURL)
            let copySync = RecordSync(store: copy, server: server)

            // The original writes and syncs first; the copy writes the same record, based on
            // the same version, and syncs after.
            try await original.put("notes", key: "shared", data: Data("from the original"))
            _ = try await originalSync.sync()
            try await copy.put("notes", key: "shared", data: Data("from the copy"))
            let copyReport = try await copySync.sync()

            #expect(copyReport.recovery?.reason == .copied)
            let originalDevice = try #require(try await original.syncStatus()?.device)
            #expect(copyReport.recovery?.previousDevice == originalDevice)
            #expect(try await copy.syncStatus()?.device != originalDevice, "the copy is a device of its own")
            // Both values survive: the server's (the original's) everywhere, the copy's in its
            // reported conflict.
            #expect(copyReport.newConflicts.count == 1)
            let conflict = try #require(try await copy.syncConflicts().first)
            #expect(conflict.local == Data("from the copy"))
            #expect(conflict.server == Data("from the original"))
            #expect(try await strings(copy, "notes") == ["shared": "from the original"])
            _ = try await originalSync.sync()
            #expect(try await strings(original, "notes") == ["shared": "from the original"])

            // Both keep syncing, in both directions.
            try await copy.resolveSyncConflict("notes", key: "shared", keeping: .local)
            _ = try await copySync.sync()
            _ = try await originalSync.sync()
            #expect(try await strings(original, "notes") == ["shared": "from the copy"])
            try await original.put("notes", key: "later", data: Data("o"))
            try await copy.put("notes", key: "other", data: Data("c"))
            _ = try await originalSync.sync()
            _ = try await copySync.sync()
            _ = try await originalSync.sync()
            for store in [original, copy] {
                #expect(try await strings(store, "notes") == ["shared": "from the copy", "later": "o", "other": "c"])
                #expect(try await store.syncStatus()?.pendingOperations == 0)
                #expect(try await store.syncConflicts().isEmpty)
            }
        }
    }

    @Test func `a copy's pending changes go once as the new device's, and an equal value is no conflict`() async throws {
        try await withTemporaryDirectory { directory in
            let server = InMemorySyncServer()
            let original = RecordStore(url: directory.appendingPathComponent("original.sqlite"))
            let originalSync = try await synced(original, server: server)
            // Pending in both once copied.
            try await original.put("notes", key: "pending", data: Data("p"))
            try await original.put("notes", key: "shared", data: Data("edited"))
            let copyURL = directory.appendingPathComponent("copy.sqlite")
            try await original.backup(to: copyURL)
            let copy = RecordStore(url: copyURL)
            _ = try await originalSync.sync()
            let report = try await RecordSync(store: copy, server: server).sync()
            #expect(report.recovery?.reissuedOperations == 2)
            #expect(report.newConflicts.isEmpty, "the server already has these values: nothing to report")
            #expect(try await copy.syncStatus()?.pendingOperations == 0)
            #expect(try await strings(copy, "notes") == ["shared": "edited", "pending": "p"])
        }
    }

    @Test func `a backup copied over the store file in place is refused as forked, and recover loses nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let server = InMemorySyncServer()
            let url = directory.appendingPathComponent("records.sqlite")
            var store = RecordStore(url: url)
            var sync = try await synced(store, server: server)
            let backupURL = directory.appendingPathComponent("backup.sqlite")
            try await store.backup(to: backupURL)
            // After the backup, the device writes and syncs on.
            try await store.put("notes", key: "shared", data: Data("after the backup"))
            try await store.put("notes", key: "newer", data: Data("n"))
            _ = try await sync.sync()
            await store.close()

            // Restored by writing the backup's bytes into the store file itself (its log files
            // removed, as docs/BACKUP.md says): the file keeps its identity, so only the server
            // can tell.
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.removeItem(atPath: url.path + suffix)
            }
            let inode = try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? Int
            try Data(contentsOf: backupURL).write(to: url, options: [])
            #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? Int == inode)
            store = RecordStore(url: url)
            sync = RecordSync(store: store, server: server)
            try await store.put("notes", key: "shared", data: Data("restored edit"))
            let error = await #expect(throws: SyncError.self) { try await sync.sync() }
            #expect(error?.code == .forkedDevice)
            #expect(error?.message.contains("recover") == true)
            #expect(try await strings(store, "notes") == ["shared": "restored edit"], "nothing local changed")
            #expect(try await store.syncStatus()?.pendingOperations == 1)

            let recovery = try await sync.recover()
            #expect(recovery.reason == .requested)
            let report = try await sync.sync()
            // The server's newer value wins the record, the restored edit is kept in the
            // conflict, and what the device wrote after the backup comes back.
            #expect(report.newConflicts.map(\.local) == [Data("restored edit")])
            #expect(try await strings(store, "notes") == ["shared": "after the backup", "newer": "n"])
            try await store.put("notes", key: "again", data: Data("a"))
            #expect(try await sync.sync().pushedOperations == 1, "the store keeps syncing")
        }
    }

    @Test func `a store synced before device ids were bound takes a new one at its next sync, keeping its queue`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let server = InMemorySyncServer()
            let store = RecordStore(url: directory.appendingPathComponent("records.sqlite"))
            _ = try await synced(store, server: server)
            try await store.put("notes", key: "queued", data: Data("q"))
            // As the library stored it before it bound device ids to files.
            try await store.performWrite(.syncStart, collection: nil) { context in
                try context.engine.connection.withStatement(
                    "DELETE FROM sync_state WHERE name IN ('device.file', 'device.last_operation', 'device.last_sequence', 'server.seen')"
                ) { try $0.run() }
            }
            let before = try #require(try await store.syncStatus())
            let report = try await RecordSync(store: store, server: server).sync()
            #expect(report.recovery?.reason == .unbound)
            #expect(report.recovery?.previousDevice == before.device)
            #expect(report.recovery?.reissuedOperations == 1)
            #expect(report.pushedOperations == 1)
            #expect(try await store.syncStatus()?.device == report.recovery?.device)
            // Bound now: later syncs keep it.
            try await store.put("notes", key: "later", data: Data("l"))
            let later = try await RecordSync(store: store, server: server).sync()
            #expect(later.recovery == nil)
            #expect(later.pushedOperations == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `recover on a store that never synced is refused and changes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { (store, _) async throws in
            let error = await #expect(throws: SyncError.self) {
                _ = try await RecordSync(store: store, server: InMemorySyncServer()).recover()
            }
            #expect(error?.code == .invalidRequest)
            #expect(try await store.syncStatus() == nil)
        }
    }
}
