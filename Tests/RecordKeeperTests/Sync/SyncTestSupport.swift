import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperSync

/// Runs `body` with `count` fresh stores of one kind (separate files on disk, or separate
/// in-memory stores), as separate devices.
func withDevices(
    _ kind: StoreKind, count: Int, _ body: ([RecordStore]) async throws -> Void
) async throws {
    try await withTemporaryDirectory { directory in
        let stores = (0..<count).map { kind.makeStore(at: directory.appendingPathComponent("device-\($0).sqlite")) }
        try await body(stores)
    }
}

/// Runs `body` with two devices (stores of one kind) of space "alice" that started syncing
/// `collections` through one in-memory server.
func withSyncingDevices(
    _ kind: StoreKind, collections: [String],
    _ body: (_ stores: [RecordStore], _ a: RecordSync, _ b: RecordSync) async throws -> Void
) async throws {
    try await withDevices(kind, count: 2) { stores in
        let server = InMemorySyncServer()
        let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
        try await a.start(space: "alice", collections: collections)
        try await b.start(space: "alice", collections: collections)
        try await body(stores, a, b)
    }
}

/// Runs `body` with two devices syncing `notes` (``withSyncingDevices(_:collections:_:)``) and
/// one conflict on `today` on device 1: its local value "from b", the server's "from a".
func withConflictOnToday(
    _ kind: StoreKind, _ body: (_ stores: [RecordStore], _ a: RecordSync, _ b: RecordSync) async throws -> Void
) async throws {
    try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
        try await stores[0].put("notes", key: "today", data: Data("first"))
        _ = try await a.sync()
        _ = try await b.sync()
        try await stores[0].put("notes", key: "today", data: Data("from a"))
        try await stores[1].put("notes", key: "today", data: Data("from b"))
        _ = try await a.sync()
        #expect(try await b.sync().newConflicts.count == 1)
        try await body(stores, a, b)
    }
}

/// A server that counts requests and can be told to fail: before a push (`unreachable`, the
/// push never arrived), or after applying it (`loseAnswers`, the answer never came back).
actor ScriptedServer: RecordSyncServer {
    let inner: any RecordSyncServer
    private(set) var pushes = 0
    private(set) var pulls = 0
    private(set) var pushedOperations: [SyncOperation] = []
    var unreachable = false
    var loseAnswers = false
    /// Pulls only fail (`unreachable`): a push goes through, the pull after it does not.
    var failPulls = false

    init(_ inner: any RecordSyncServer = InMemorySyncServer()) {
        self.inner = inner
    }

    func setUnreachable(_ value: Bool) { unreachable = value }
    func setLoseAnswers(_ value: Bool) { loseAnswers = value }
    func setFailPulls(_ value: Bool) { failPulls = value }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        pushes += 1
        if unreachable { throw SyncError(.unreachable, "test: the server is unreachable") }
        pushedOperations += operations
        let outcomes = try await inner.push(space: space, operations: operations)
        if loseAnswers { throw SyncError(.unreachable, "test: the connection broke before the answer arrived") }
        return outcomes
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    /// The collections each pull named (`nil`: all), and the collections of the changes each
    /// page answered, in order.
    private(set) var pulledFilters: [Set<String>?] = []
    private(set) var pulledCollections: [String] = []

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        pulls += 1
        pulledFilters.append(collections)
        if unreachable || failPulls { throw SyncError(.unreachable, "test: the server is unreachable") }
        let page = try await inner.pull(space: space, after: cursor, limit: limit, collections: collections)
        pulledCollections += page.changes.map(\.collection)
        return page
    }
}

/// A server that can never be reached.
struct OfflineServer: RecordSyncServer {
    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        throw SyncError(.unreachable, "test: offline")
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        throw SyncError(.unreachable, "test: offline")
    }
}

/// The pending operations of a store, each as its records' (collection, key, payload or nil),
/// read directly from the file's tables.
func pendingOperations(_ store: RecordStore) async throws -> [[SyncRecordKey: Data?]] {
    try await store.performRead(.syncPush, collection: nil) { source in
        guard let engine = source.engine, try engine.syncState.exists() else { return [] }
        return try engine.syncQueue.operations(after: 0, limit: 1_000_000).map { operation in
            var changes: [SyncRecordKey: Data?] = [:]
            for change in try engine.syncQueue.changes(operation.sequence) {
                changes[SyncRecordKey(collection: change.collection, key: change.key)] = .some(change.value.payload)
            }
            return changes
        }
    }
}

extension SyncRecordKey {
    init(_ collection: String, _ key: String) { self.init(collection: collection, key: key) }
}

/// Every record of `collection` in `store`, as strings.
func strings(_ store: RecordStore, _ collection: String) async throws -> [String: String] {
    (try await store.read(collection) ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
}

/// Copies a committed fixture store into `directory`.
func fixtureCopy(_ name: String, into directory: URL) throws -> URL {
    let source = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
    let destination = directory.appendingPathComponent(name)
    try FileManager.default.copyItem(at: source, to: destination)
    return destination
}

/// A server whose pulls answer with the cursor `.start`, as a lagging replica or a restored
/// server might: a client must refuse such a page, and its cursor never moves backwards.
struct StaleCursorServer: RecordSyncServer {
    let inner: any RecordSyncServer

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        let page = try await inner.pull(space: space, after: .start, limit: limit)
        return SyncPage(changes: page.changes, cursor: .start, hasMore: false)
    }
}
