import Foundation

/// What a store knows of its device's history on the server (format 5, `sync_state`): the last
/// operation of this device the server recorded, and the highest server version it has seen.
struct SyncChain: Sendable, Equatable {
    /// The last operation of this device the server recorded (applied or conflicting); nil
    /// when it has recorded none since the device id was taken.
    var lastOperation: UUID?
    /// Its sequence; 0 when none.
    var lastSequence: Int64
    /// The highest server version (counter) this device has seen: in a pull, an acknowledgement
    /// or a conflict. A server never gives out a version at or below it again.
    var seen: Int64

    /// The predecessor of the next operation sent after this chain.
    var predecessor: SyncPredecessor {
        lastOperation.map { .operation($0) } ?? .firstOfDevice
    }

    /// Records that the server recorded `operation` (applied or conflicting), unless a later one
    /// of this device is recorded already.
    mutating func recorded(_ operation: UUID, sequence: Int64) {
        guard sequence > lastSequence else { return }
        lastOperation = operation
        lastSequence = sequence
    }

    mutating func saw(_ version: Int64) {
        seen = max(seen, version)
    }
}

/// The gateway of sync's state (format 5, docs/FORMAT.md: `sync_state`, `sync_collections`),
/// on the connection of one request: the collections registered for sync and their policies,
/// the pull cursor, and the device: its id, the file it was taken in, and the chain of its
/// operations (`SyncChain`).
struct SyncStateTable {
    let runner: StatementRunner

    // MARK: Values

    func string(_ name: StaticString) throws -> String? {
        try runner.one("SELECT value FROM sync_state WHERE name = ?1", name.description) {
            $0.isNull(at: 0) ? nil : $0.string(at: 0)
        }
    }

    func integer(_ name: StaticString) throws -> Int64? {
        try runner.one("SELECT value FROM sync_state WHERE name = ?1", name.description) {
            $0.isNull(at: 0) ? nil : $0.int64(at: 0)
        }
    }

    func set(_ name: StaticString, _ value: String?) throws {
        try runner.execute(
            "INSERT INTO sync_state (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            name.description, value)
    }

    func set(_ name: StaticString, integer value: Int64) throws {
        try runner.execute(
            "INSERT INTO sync_state (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            name.description, value)
    }

    /// The stored pull cursor (`.start` when none).
    func cursor() throws -> SyncCursor {
        let counter = try integer("cursor.counter") ?? 0
        if let collection = try string("cursor.collection"), let key = try string("cursor.key") {
            return SyncCursor(counter: counter, position: SyncCursor.Position(collection: collection, key: key))
        }
        return SyncCursor(counter: counter)
    }

    func setCursor(_ cursor: SyncCursor) throws {
        try set("cursor.counter", integer: cursor.counter)
        try set("cursor.collection", cursor.position?.collection)
        try set("cursor.key", cursor.position?.key)
    }

    /// True when the store file has the tables of format 5 (reads of older formats answer
    /// "no sync" instead of failing; reads never migrate).
    func exists() throws -> Bool {
        try runner.exists("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sync_state'")
    }

    // MARK: Registered collections

    /// The registered collections and their policies.
    func collections() throws -> [String: SyncConflictPolicy] {
        var result: [String: SyncConflictPolicy] = [:]
        try runner.each("SELECT name, policy FROM sync_collections") { statement in
            let name = statement.string(at: 0)
            let policy = statement.string(at: 1)
            guard let value = SyncConflictPolicy(rawValue: policy) else {
                throw runner.malformed(collection: name, "unknown sync policy '\(policy)' in sync_collections")
            }
            result[name] = value
        }
        return result
    }

    func register(_ name: String, policy: SyncConflictPolicy) throws {
        try runner.execute(
            """
            INSERT INTO sync_collections (name, policy) VALUES (?1, ?2)
            ON CONFLICT (name) DO UPDATE SET policy = excluded.policy
            """, name, policy.rawValue, collection: name)
        try runner.execute("UPDATE collections SET synced = 1 WHERE name = ?1", name, collection: name)
        runner.connection.collectionRefs.invalidate()
    }

    // MARK: The device

    /// The identity of the file this request writes, as stored with the device id: `dev:ino`
    /// of the store file, `memory` for an in-memory store; nil when the path cannot be
    /// examined (then nothing can be told about copies).
    var fileMarker: String? {
        guard let path = runner.path else { return "memory" }
        guard case .file(let identity) = StoreFileIdentity.lookup(path) else { return nil }
        return "\(identity.device):\(identity.inode)"
    }

    /// The stored chain; `seen` is computed from what the store holds when it was never
    /// stored (a store synced before it was kept).
    func chain() throws -> SyncChain {
        let last = try string("device.last_operation")
        var operation: UUID?
        if let last {
            guard let id = UUID(uuidString: last) else {
                throw runner.malformed("sync_state holds a malformed device.last_operation '\(last)'")
            }
            operation = id
        }
        let seen = try integer("server.seen") ?? computedSeen()
        return SyncChain(
            lastOperation: operation, lastSequence: try integer("device.last_sequence") ?? 0, seen: seen)
    }

    /// Stores `chain`, never moving it back: the last operation only for a later sequence, the
    /// version seen only upwards (another client of the store may have stored more meanwhile).
    func advanceChain(to chain: SyncChain) throws {
        let stored = try self.chain()
        if let operation = chain.lastOperation, chain.lastSequence > stored.lastSequence {
            try set("device.last_operation", operation.uuidString)
            try set("device.last_sequence", integer: chain.lastSequence)
        }
        let storedSeen = try integer("server.seen")
        if chain.seen > stored.seen || storedSeen == nil {
            try set("server.seen", integer: max(chain.seen, stored.seen))
        }
    }

    /// The highest server version the store holds anywhere: its cursor, its records' server
    /// versions, values kept aside, conflicts.
    private func computedSeen() throws -> Int64 {
        let counter = try integer("cursor.counter") ?? 0
        let stored = try runner.one(
            """
            SELECT max(coalesce((SELECT max(server_version) FROM sync_records), 0),
                       coalesce((SELECT max(aside_version) FROM sync_records), 0),
                       coalesce((SELECT max(server_version) FROM sync_conflicts), 0))
            """
        ) { $0.int64(at: 0) } ?? 0
        return max(counter, stored)
    }

    /// Takes a new device id for this store file, in the caller's transaction: the pending
    /// operations get new ids (their sequences, changes and bases stay: each is still based on
    /// the server version the device last saw, so an edit made meanwhile on the server is a
    /// conflict), the chain starts again, and the file's identity is stored with the id.
    /// Returns the previous device id and the number of operations given new ids.
    func takeNewDevice() throws -> (previous: String?, device: String, reissued: Int) {
        let previous = try string("device")
        let device = UUID().uuidString
        let seen = try chain().seen
        try set("device", device)
        try set("device.file", fileMarker)
        try set("device.last_operation", nil)
        try set("device.last_sequence", nil)
        try set("server.seen", integer: seen)
        let reissued = try SyncQueueTable(runner: runner).reissueOperationIDs()
        return (previous, device, reissued)
    }
}
