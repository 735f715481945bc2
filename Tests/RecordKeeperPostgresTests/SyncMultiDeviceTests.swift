import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// Three local stores and one real PostgreSQL, end to end through `RecordSync`: edits converge
/// to the union, a concurrent edit is one reported conflict that loses nothing and converges
/// once resolved, deletions propagate, an offline device catches up, a re-delivered operation
/// changes nothing, pushes committing while a device pulls never make it skip a change, and a
/// device of another space sees nothing. Each test uses its own spaces.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct SyncMultiDeviceTests {
    /// One device: its own store file and its own connection to the server.
    struct Device {
        let name: String
        let store: RecordStore
        let server: PostgresSyncServer
        let sync: RecordSync

        init(_ name: String, in directory: URL, server: PostgresSyncServer? = nil) async throws {
            self.name = name
            store = RecordStore(
                url: directory.appendingPathComponent("\(name).sqlite"), options: .init(durability: .normal))
            let server = if let server { server } else { try await TestPostgres.server() }
            self.server = server
            sync = RecordSync(store: store, server: server)
        }

        func notes() async throws -> [String: String] {
            (try await store.read("notes") ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
        }

        func put(_ key: String, _ value: String) async throws {
            try await store.put("notes", key: key, data: Data(value.utf8))
        }

        func remove(_ keys: String...) async throws {
            var changes = RecordChanges()
            for key in keys { changes[key] = nil }
            try await store.apply("notes", changes: changes)
        }
    }

    /// Three devices started on `notes` in a fresh space.
    private func devices(_ directory: URL, count: Int = 3) async throws -> (space: String, devices: [Device]) {
        let space = TestPostgres.space("devices")
        var devices: [Device] = []
        for index in 0..<count {
            let device = try await Device("device\(index)", in: directory)
            try await device.sync.start(space: space, collections: ["notes"])
            devices.append(device)
        }
        return (space, devices)
    }

    /// Syncs every device twice over (the first round carries each device's changes up, the
    /// second brings everyone's down) and returns the reports.
    @discardableResult
    private func syncAll(_ devices: [Device]) async throws -> [SyncReport] {
        var reports: [SyncReport] = []
        for _ in 0..<2 {
            for device in devices { reports.append(try await device.sync.sync()) }
        }
        return reports
    }

    private func expectConverged(_ devices: [Device], to expected: [String: String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for device in devices {
            #expect(try await device.notes() == expected, "\(device.name) differs", sourceLocation: sourceLocation)
            #expect(try await device.store.syncStatus()?.pendingOperations == 0, "\(device.name) has pending operations",
                    sourceLocation: sourceLocation)
        }
    }

    @Test func `edits to different keys on every device converge to the union`() async throws {
        try await withTemporaryDirectory { directory in
            // Device 0 has records before sync starts: they are uploaded once.
            let space = TestPostgres.space("union")
            let first = try await Device("device0", in: directory)
            try await first.put("before", "0")
            try await first.sync.start(space: space, collections: ["notes"])
            var devices = [first]
            for index in 1..<3 {
                let device = try await Device("device\(index)", in: directory)
                try await device.sync.start(space: space, collections: ["notes"])
                devices.append(device)
            }
            var expected = ["before": "0"]
            for (index, device) in devices.enumerated() {
                // One record per transaction, and several in one transaction.
                for number in 0..<3 {
                    try await device.put("d\(index)-\(number)", "v\(index)")
                    expected["d\(index)-\(number)"] = "v\(index)"
                }
                let batch = (0..<5).reduce(into: [String: Data]()) { $0["d\(index)-batch\($1)"] = Data("b\(index)".utf8) }
                try await device.store.apply("notes", changes: RecordChanges(upserts: batch))
                for key in batch.keys { expected[key] = "b\(index)" }
            }
            let reports = try await syncAll(devices)
            #expect(reports.allSatisfy { $0.newConflicts.isEmpty })
            try await expectConverged(devices, to: expected)
            let server = try await first.server.snapshot(space: space)
            #expect(server.count == expected.count)
            #expect(server.allSatisfy { key, value in expected[String(key.dropFirst("notes/".count))].map(SyncValue.text) == value })
        }
    }

    @Test func `concurrent edits of one key are one reported conflict, lose no value, and converge once resolved`() async throws {
        try await withTemporaryDirectory { directory in
            let (_, devices) = try await devices(directory)
            try await devices[0].put("shared", "base")
            try await syncAll(devices)
            try await expectConverged(devices, to: ["shared": "base"])

            try await devices[0].put("shared", "zero")
            try await devices[1].put("shared", "one")
            let pushedFirst = try await devices[0].sync.sync()
            let pushedSecond = try await devices[1].sync.sync()
            #expect(pushedFirst.newConflicts.isEmpty)
            #expect(pushedSecond.newConflicts.map(\.key) == ["shared"], "exactly one conflict, on the device that pushed later")
            try await syncAll(devices)

            // Everyone converged on the server's value; the other value waits in device 1's conflict.
            try await expectConverged(devices, to: ["shared": "zero"])
            let conflicts = try await devices[1].store.syncConflicts()
            #expect(conflicts.count == 1)
            let conflict = try #require(conflicts.first)
            #expect(conflict.collection == "notes" && conflict.key == "shared")
            #expect(conflict.local == Data("one".utf8))
            #expect(conflict.server == Data("zero".utf8))
            #expect(conflict.serverVersion != nil)
            #expect(try await devices[0].store.syncConflicts().isEmpty)
            #expect(try await devices[2].store.syncConflicts().isEmpty)
            #expect(try await devices[1].store.syncStatus()?.conflicts == 1)

            // Keeping the local value pushes it, based on the server's version: no new conflict.
            try await devices[1].store.resolveSyncConflict("notes", key: "shared", keeping: .local)
            #expect(try await devices[1].store.syncConflicts().isEmpty)
            let reports = try await syncAll(devices)
            #expect(reports.allSatisfy { $0.newConflicts.isEmpty })
            try await expectConverged(devices, to: ["shared": "one"])

            // A merged value converges the same way.
            try await devices[2].put("shared", "two")
            try await devices[0].put("shared", "zero again")
            _ = try await devices[2].sync.sync()
            let clash = try await devices[0].sync.sync()
            #expect(clash.newConflicts.count == 1)
            try await devices[0].store.resolveSyncConflict("notes", key: "shared", keeping: .merged(Data("two + zero".utf8)))
            try await syncAll(devices)
            try await expectConverged(devices, to: ["shared": "two + zero"])
            for device in devices { #expect(try await device.store.syncConflicts().isEmpty) }
        }
    }

    @Test func `deletions propagate to every device`() async throws {
        try await withTemporaryDirectory { directory in
            let (space, devices) = try await devices(directory)
            for key in ["a", "b", "c", "d"] { try await devices[0].put(key, key) }
            try await syncAll(devices)
            try await expectConverged(devices, to: ["a": "a", "b": "b", "c": "c", "d": "d"])

            try await devices[1].remove("a", "b")
            try await devices[2].remove("c")
            try await syncAll(devices)
            try await expectConverged(devices, to: ["d": "d"])
            // The server keeps tombstones, so a device joining later never sees the deleted records.
            let snapshot = try await devices[0].server.snapshot(space: space)
            #expect(snapshot["notes/a"] == .tombstone && snapshot["notes/c"] == .tombstone)
            let late = try await Device("late", in: directory)
            try await late.sync.start(space: space, collections: ["notes"])
            _ = try await late.sync.sync()
            #expect(try await late.notes() == ["d": "d"])
        }
    }

    @Test func `a device that was offline while the others pushed 2,000 changes catches up`() async throws {
        try await withTemporaryDirectory { directory in
            let (space, devices) = try await devices(directory)
            try await syncAll(devices)
            let offline = devices[2]

            // Offline: its sync cannot reach a server, and local reads and writes go on.
            let unreachable = RecordSync(store: offline.store, server: UnreachableServer())
            try await offline.put("offline-edit", "kept")
            let error = await #expect(throws: SyncError.self) { try await unreachable.sync() }
            #expect(error?.code == .unreachable)
            #expect(try await offline.notes() == ["offline-edit": "kept"])
            #expect(try await offline.store.syncStatus()?.pendingOperations == 1)

            // Meanwhile: 1,000 one-record transactions on device 0, one of 1,000 records on device 1.
            var expected = ["offline-edit": "kept"]
            for number in 0..<1_000 {
                try await devices[0].put("single-\(number)", "\(number)")
                expected["single-\(number)"] = "\(number)"
            }
            let batch = (0..<1_000).reduce(into: [String: Data]()) { $0["batch-\($1)"] = Data("\($1)".utf8) }
            try await devices[1].store.apply("notes", changes: RecordChanges(upserts: batch))
            for key in batch.keys { expected[key] = String(decoding: batch[key]!, as: UTF8.self) }
            let first = try await devices[0].sync.sync()
            #expect(first.pushedOperations == 1_000)
            _ = try await devices[1].sync.sync()

            // Back online: it pushes its edit and pulls the 2,000 others, page by page.
            let back = try await offline.sync.sync()
            #expect(back.pushedOperations == 1)
            #expect(back.pulledChanges == 2_000)
            try await syncAll(devices)
            try await expectConverged(devices, to: expected)
            #expect(try await devices[0].server.snapshot(space: space).count == expected.count)
        }
    }

    @Test func `a re-delivered operation changes nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let (space, devices) = try await devices(directory)
            try await devices[0].put("a", "1")
            try await syncAll(devices)
            let head = try await devices[0].server.pullAll(space: space).cursor

            // The server applies the push, but its answer is lost: to the device it is unreachable.
            let losing = LosingAnswers(devices[1].server)
            try await devices[1].put("b", "2")
            let error = await #expect(throws: SyncError.self) {
                try await RecordSync(store: devices[1].store, server: losing).push()
            }
            #expect(error?.code == .unreachable)
            #expect(try await devices[1].store.syncStatus()?.pendingOperations == 1, "the outcome is unknown: still pending")
            let sent = try #require(losing.pushed.withLock { $0 }.first)
            let applied = try await devices[0].server.pullAll(space: space, after: head)
            #expect(applied.changes.map(\.key) == ["b"])

            // The next sync sends it again: the server answers with the first outcome, no second effect.
            let again = try await devices[1].sync.push()
            #expect(again.pushedOperations == 1)
            #expect(try await devices[1].store.syncStatus()?.pendingOperations == 0)
            #expect(try await devices[0].server.pullAll(space: space, after: applied.cursor).changes.isEmpty)
            // And the same operation pushed once more by hand: a redelivery, the head unmoved.
            let outcomes = try await devices[0].server.push(space: space, operations: [sent])
            #expect(outcomes.map(\.isRedelivery) == [true])
            #expect(outcomes.first?.result.appliedVersion == SyncServerVersion(applied.cursor.counter))
            #expect(try await devices[0].server.pullAll(space: space).cursor == applied.cursor)

            try await syncAll(devices)
            try await expectConverged(devices, to: ["a": "1", "b": "2"])
            // One operation id per applied operation, each once.
            let counted = try await TestPostgres.connection().transaction { connection in
                try connection.execute(
                    "SELECT count(*), count(DISTINCT operation_id) FROM recordkeeper_sync_operations WHERE space = $1",
                    [.text(space)])
            }
            #expect(try counted.int64(0, 0) == 2)
            #expect(try counted.int64(0, 1) == 2)
        }
    }

    @Test func `pushes committing while a device pulls never make it skip a change`() async throws {
        try await withTemporaryDirectory { directory in
            let (space, devices) = try await devices(directory)
            try await devices[0].put("base", "0")
            try await syncAll(devices)
            let gateA = BlockingGate()
            let gateB = BlockingGate()
            let serverA = try await TestPostgres.server(hooks: .init(beforeCommit: { _ in gateA.arriveAndWait() }))
            let serverB = try await TestPostgres.server(hooks: .init(beforeCommit: { _ in gateB.arriveAndWait() }))
            let monitor = try await TestPostgres.connection()
            let reader = devices[2]

            // Device 0 holds the space's counter and stops before its COMMIT; device 1 queues.
            try await devices[0].put("a1", "A")
            try await devices[0].put("a2", "A")
            try await devices[1].put("b1", "B")
            let pushA = Task { try await RecordSync(store: devices[0].store, server: serverA).push() }
            await gateA.arrival()
            let pidB = await serverB.connection.backendProcessID
            let pushB = Task { try await RecordSync(store: devices[1].store, server: serverB).push() }
            while try await monitor.transaction(operation: "watch locks", { connection in
                try connection.execute(
                    "SELECT count(*) FROM pg_locks WHERE pid = $1 AND NOT granted", [.int64(Int64(pidB))]
                ).int64(0, 0)
            }) == 0 {
                await Task.yield()
            }

            // A pull now sees neither; then A commits while B, holding the counter, has not.
            #expect(try await reader.sync.pull().pulledChanges == 0)
            let cursorBefore = try await reader.store.syncStatus()?.cursor
            gateA.open()
            #expect(try await pushA.value.pushedOperations == 2)
            await gateB.arrival()
            let middle = try await reader.sync.pull()
            #expect(middle.pulledChanges == 2)
            #expect(try await reader.notes() == ["base": "0", "a1": "A", "a2": "A"])
            #expect(try #require(cursorBefore) < middle.cursor)

            gateB.open()
            #expect(try await pushB.value.pushedOperations == 1)
            let last = try await reader.sync.pull()
            #expect(last.pulledChanges == 1, "B's change, committed after the pull that passed A's")
            try await syncAll(devices)
            try await expectConverged(devices, to: ["base": "0", "a1": "A", "a2": "A", "b1": "B"])
            #expect(try await devices[0].server.snapshot(space: space).count == 4)
        }
    }

    @Test func `a device of another space sees nothing of this one`() async throws {
        try await withTemporaryDirectory { directory in
            let (_, devices) = try await devices(directory)
            try await devices[0].put("private", "home")
            try await syncAll(devices)

            let stranger = try await Device("stranger", in: directory)
            let otherSpace = TestPostgres.space("other")
            try await stranger.sync.start(space: otherSpace, collections: ["notes"])
            try await stranger.put("theirs", "other")
            let report = try await stranger.sync.sync()
            #expect(report.pulledChanges == 0)
            #expect(try await stranger.notes() == ["theirs": "other"])
            try await syncAll(devices)
            try await expectConverged(devices, to: ["private": "home"])
            #expect(try await stranger.server.snapshot(space: otherSpace) == ["notes/theirs": .text("other")])

            // And a store syncing one space refuses to be moved to another: nothing changes.
            let error = await #expect(throws: SyncError.self) {
                try await stranger.sync.start(space: "some-other-space", collections: ["notes"])
            }
            #expect(error?.code == .invalidRequest)
            #expect(try await stranger.store.syncStatus()?.space == otherSpace)
        }
    }
}

/// A server that cannot be reached.
struct UnreachableServer: RecordSyncServer {
    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        throw SyncError(.unreachable, "the test's server is offline")
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        throw SyncError(.unreachable, "the test's server is offline")
    }
}

/// Passes pushes to a server, which applies them, and then loses the answer: the device hears
/// "unreachable", as when a connection breaks after the server's COMMIT.
final class LosingAnswers: RecordSyncServer {
    let base: any RecordSyncServer
    let pushed = Protected<[SyncOperation]>([])

    init(_ base: any RecordSyncServer) { self.base = base }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        pushed.withLock { $0 += operations }
        _ = try await base.push(space: space, operations: operations)
        throw SyncError(.unreachable, "the answer was lost")
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await base.pull(space: space, after: cursor, limit: limit)
    }
}
