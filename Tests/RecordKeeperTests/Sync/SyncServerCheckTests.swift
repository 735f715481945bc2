import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperSync

/// The client checks what the server answers against what it knows: outcomes of other
/// operations, counters and versions at or below what it has seen, numbers out of range,
/// changes it cannot hold. Each ends in a `serverFailure` naming what is wrong, with nothing of
/// that answer applied, never a crash, a silent drop or a device that diverges for ever.
@Suite struct SyncServerCheckTests {
    /// A store started on "notes" with one record synced (server version 1), on `server`.
    private func started(_ store: RecordStore, _ server: any RecordSyncServer) async throws -> RecordSync {
        let sync = RecordSync(store: store, server: server)
        try await sync.start(space: "s", collections: ["notes"])
        try await store.put("notes", key: "first", data: Data("1"))
        _ = try await sync.sync()
        return sync
    }

    @Test(arguments: StoreKind.allCases)
    func `an outcome recorded for another device or sequence is not taken as applied`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let inner = InMemorySyncServer()
            let server = TamperingServer(inner)
            let sync = try await started(store, server)
            try await store.put("notes", key: "a", data: Data("mine"))
            await server.setOutcomes { outcomes in
                outcomes.map { outcome in
                    var foreign = outcome
                    foreign.device = "someone else"
                    foreign.sequence = 1
                    foreign.isRedelivery = true
                    return foreign
                }
            }
            let error = await #expect(throws: SyncError.self) { try await sync.push() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("device someone else") == true)
            #expect(error?.message.contains("space s") == true)
            #expect(try await store.syncStatus()?.pendingOperations == 1, "the operation stays pending")
            #expect(try await strings(store, "notes") == ["first": "1", "a": "mine"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a version at or below one the device has seen is refused: the server's counter went back`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let server = TamperingServer(InMemorySyncServer())
            let sync = try await started(store, server)
            try await store.put("notes", key: "a", data: Data("2"))
            await server.setOutcomes { outcomes in
                outcomes.map { outcome in
                    var rewound = outcome
                    rewound.result = .applied(SyncServerVersion(1))
                    return rewound
                }
            }
            let error = await #expect(throws: SyncError.self) { try await sync.push() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("went back") == true)
            #expect(try await store.syncStatus()?.pendingOperations == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a page ending at a counter below what the device has seen is refused and changes nothing`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let inner = InMemorySyncServer()
            let server = TamperingServer(inner)
            let sync = try await started(store, server)
            for n in 0..<3 { try await store.put("notes", key: "k\(n)", data: Data("\(n)")) }
            _ = try await sync.push()  // seen: version 4
            await server.setPage { page in SyncPage(changes: [], cursor: SyncCursor(counter: 2), hasMore: false) }
            let cursor = try await store.syncStatus()?.cursor
            let error = await #expect(throws: SyncError.self) { try await sync.pull() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("below version 4") == true)
            #expect(try await store.syncStatus()?.cursor == cursor)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `pages with changes out of order, out of range or past their cursor are refused whole`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let server = TamperingServer(InMemorySyncServer())
            let sync = try await started(store, server)
            func change(_ key: String, _ version: Int64) -> SyncPulledChange {
                SyncPulledChange(collection: "notes", key: key, value: .payload(Data("x")), version: SyncServerVersion(version))
            }
            let pages = [
                SyncPage(changes: [change("b", 3), change("a", 3)], cursor: SyncCursor(counter: 3), hasMore: false),
                SyncPage(changes: [change("b", Int64.max)], cursor: SyncCursor(counter: Int64.max), hasMore: false),
                SyncPage(changes: [change("b", 9)], cursor: SyncCursor(counter: 5), hasMore: false),
                SyncPage(changes: [change("b", 3)], cursor: SyncCursor(counter: 7), hasMore: true),
            ]
            for bad in pages {
                await server.setPage { _ in bad }
                let error = await #expect(throws: SyncError.self) { try await sync.pull() }
                #expect(error?.code == .serverFailure, "\(bad)")
                #expect(try await strings(store, "notes") == ["first": "1"], "nothing of \(bad) was applied")
                #expect(try await store.syncStatus()?.cursor == SyncCursor(counter: 1))
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a pulled record the store cannot hold is named and skipped, and every other change comes down`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let inner = InMemorySyncServer()
            let server = TamperingServer(inner)
            let sync = try await started(store, server)
            // Another device writes two records; the server then says one of them has an empty key.
            let other = RecordSync(store: RecordStore.inMemory(), server: inner)
            try await other.start(space: "s", collections: ["notes"])
            try await other.store.apply(
                "notes", changes: RecordChanges(upserts: ["bad": Data("b"), "good": Data("g")]))
            _ = try await other.sync()
            await server.setPage { page in
                var page = page
                page.changes = page.changes.map { change in
                    var change = change
                    if change.key == "bad" { change.key = "" }
                    return change
                }
                return page
            }
            let error = await #expect(throws: SyncError.self) { try await sync.pull() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains(#""notes"/"""#) == true, "\(String(describing: error))")
            #expect(error?.message.contains("must not be empty") == true)
            #expect(try await strings(store, "notes") == ["first": "1", "good": "g"], "the good record came down")
            #expect(try await store.syncStatus()?.cursor == SyncCursor(counter: 2), "the pull went past it")
            // The device goes on syncing.
            await server.setPage(nil)
            try await store.put("notes", key: "next", data: Data("n"))
            #expect(try await sync.sync().pushedOperations == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a pulled payload that is not JSON in a collection this store indexed is skipped, and sync goes on`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let server = InMemorySyncServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            try await store.put("notes", key: "first", data: Data(#"{"level":0}"#.utf8))
            _ = try await sync.sync()
            #expect(try await store.declareIndex("notes", on: FieldPath("level")))
            // Another device, which declared no index, stores a payload that is not JSON.
            let other = RecordSync(store: RecordStore.inMemory(), server: server)
            try await other.start(space: "s", collections: ["notes"])
            try await other.store.apply(
                "notes", changes: RecordChanges(upserts: ["bad": Data("plain text"), "good": Data(#"{"level":2}"#.utf8)]))
            _ = try await other.sync()

            let error = await #expect(throws: SyncError.self) { try await sync.pull() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains(#""notes"/"bad""#) == true, "\(String(describing: error))")
            #expect(error?.message.contains("not JSON") == true, "\(String(describing: error))")
            #expect(try await strings(store, "notes") == ["first": #"{"level":0}"#, "good": #"{"level":2}"#])
            // Past it: the next sync neither fails on it again nor stops the device.
            try await store.put("notes", key: "next", data: Data(#"{"level":1}"#.utf8))
            let report = try await sync.sync()
            #expect(report.pushedOperations == 1)
            #expect(try await other.sync().pulledChanges == 1, "the other device gets the change made after it")
        }
    }

    /// `store` syncing "notes" with an index on `level`; another device (no index) wrote "x" as
    /// plain text, and this store's edit of "x" then conflicted with it in a sync, whose pull
    /// named the payload it skipped. Returns this store's sync and the other device's.
    private func conflictWithPlainText(_ store: RecordStore) async throws -> (sync: RecordSync, other: RecordSync) {
        let server = InMemorySyncServer()
        let sync = RecordSync(store: store, server: server)
        try await sync.start(space: "s", collections: ["notes"])
        try await store.put("notes", key: "x", data: Data(#"{"level":0}"#.utf8))
        _ = try await sync.sync()
        #expect(try await store.declareIndex("notes", on: FieldPath("level")))
        let other = RecordSync(store: RecordStore.inMemory(), server: server)
        try await other.start(space: "s", collections: ["notes"])
        _ = try await other.sync()
        try await other.store.put("notes", key: "x", data: Data("plain text".utf8))
        _ = try await other.sync()
        try await store.put("notes", key: "x", data: Data(#"{"level":1}"#.utf8))
        // The push records the conflict; the pull after it names the payload it skips, once.
        let pulled = await #expect(throws: SyncError.self) { try await sync.sync() }
        #expect(pulled?.message.contains("not JSON") == true, "\(String(describing: pulled))")
        return (sync, other)
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflict whose server value is not JSON in a collection this store indexed keeps the local value, and sync goes on`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let (sync, other) = try await conflictWithPlainText(store)
            let conflict = try #require(try await store.syncConflicts().first)
            #expect(conflict.server == Data("plain text".utf8))
            #expect(conflict.local == Data(#"{"level":1}"#.utf8))
            #expect(try await store.value("notes", key: "x") == Data(#"{"level":1}"#.utf8), "the local value stays")

            // Sync goes on, and keeping the local value sends it.
            try await store.put("notes", key: "y", data: Data(#"{"level":2}"#.utf8))
            #expect(try await sync.sync().pushedOperations == 1)
            // The server's value cannot be kept while the indexes stand: refused, nothing changed.
            let refused = await #expect(throws: RecordStoreError.self) {
                try await store.resolveSyncConflict("notes", key: "x", keeping: .server)
            }
            #expect(refused?.code == .invalidArgument)
            #expect(refused?.detail?.contains("not JSON") == true, "\(String(describing: refused))")
            #expect(try await store.syncConflicts().count == 1)
            try await store.resolveSyncConflict("notes", key: "x", keeping: .local)
            #expect(try await sync.sync().pushedOperations == 1)
            _ = try await other.sync()
            #expect(try await other.store.value("notes", key: "x") == Data(#"{"level":1}"#.utf8))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keeping the server's value that is not JSON, once the indexes are dropped, takes it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let (sync, _) = try await conflictWithPlainText(store)
            #expect(try await store.syncConflicts().count == 1)
            #expect(try await store.dropIndex("notes", on: FieldPath("level")))
            try await store.resolveSyncConflict("notes", key: "x", keeping: .server)
            #expect(try await store.value("notes", key: "x") == Data("plain text".utf8), "device and server agree")
            #expect(try await sync.sync().pushedOperations == 0)
            #expect(try await store.value("notes", key: "x") == Data("plain text".utf8))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conflict naming a record the operation does not change is refused`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let server = TamperingServer(InMemorySyncServer())
            let sync = try await started(store, server)
            try await store.put("notes", key: "a", data: Data("mine"))
            await server.setOutcomes { outcomes in
                outcomes.map { outcome in
                    var foreign = outcome
                    foreign.result = .conflict([
                        SyncConflict(
                            collection: "notes", key: "elsewhere", base: nil,
                            server: SyncRecordState(value: .tombstone, version: SyncServerVersion(5)))
                    ])
                    return foreign
                }
            }
            let error = await #expect(throws: SyncError.self) { try await sync.push() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains(#""notes"/"elsewhere""#) == true)
            #expect(try await store.syncStatus()?.pendingOperations == 1)
            #expect(try await store.syncConflicts().isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a server that lost operations of this device is told apart from another copy`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let server = TamperingServer(InMemorySyncServer())
            let sync = try await started(store, server)
            try await store.put("notes", key: "a", data: Data("2"))
            // The server answers as one restored from before this device's first operation.
            await server.setOutcomes { outcomes in
                outcomes.map { outcome in
                    var lost = outcome
                    lost.result = .outOfOrder(lastSequence: 0)
                    return lost
                }
            }
            let error = await #expect(throws: SyncError.self) { try await sync.push() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("lost operations") == true)
            #expect(try await store.syncStatus()?.pendingOperations == 1)
        }
    }

    @Test func `a space counter with no next value is an error, not a crash`() throws {
        let operation = SyncOperation(
            device: "d", sequence: 1, changes: [SyncChange(collection: "c", key: "k", value: .tombstone, base: nil)])
        for counter in [Int64.max, Int64.max - 1] {
            #expect(throws: SyncError.self) {
                _ = try SyncPushPlanner.plan([operation], state: SyncPushState(counter: counter), space: "s")
            }
        }
        let plan = try SyncPushPlanner.plan([operation], state: SyncPushState(counter: Int64.max - 2), space: "s")
        #expect(plan.counter == Int64.max - 1)
    }
}

/// A server whose answers a test rewrites: outcomes of pushes, pages of pulls.
actor TamperingServer: RecordSyncServer {
    let inner: any RecordSyncServer
    private var outcomes: (@Sendable ([SyncOutcome]) -> [SyncOutcome])?
    private var page: (@Sendable (SyncPage) -> SyncPage)?

    init(_ inner: any RecordSyncServer) {
        self.inner = inner
    }

    func setOutcomes(_ rewrite: (@Sendable ([SyncOutcome]) -> [SyncOutcome])?) { outcomes = rewrite }
    func setPage(_ rewrite: (@Sendable (SyncPage) -> SyncPage)?) { page = rewrite }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        let answer = try await inner.push(space: space, operations: operations)
        return outcomes?(answer) ?? answer
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        let answer = try await inner.pull(space: space, after: cursor, limit: limit)
        return page?(answer) ?? answer
    }
}
