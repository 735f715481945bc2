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

/// The device's identity and history in the store file: which file its device id was taken
/// in, the chain of its operations, and taking a new device id.
extension RecordEngine {
    /// The identity of the file this engine writes, as stored with the device id: `dev:ino` of
    /// the store file, `memory` for an in-memory store; nil when the path cannot be examined
    /// (then nothing can be told about copies).
    var syncFileMarker: String? {
        guard let path else { return "memory" }
        guard case .file(let identity) = StoreFileIdentity.lookup(path) else { return nil }
        return "\(identity.device):\(identity.inode)"
    }

    /// The stored chain; `seen` is computed from what the store holds when it was never
    /// stored (a store synced before it was kept).
    func syncChain() throws -> SyncChain {
        let last = try syncStateString("device.last_operation")
        var operation: UUID?
        if let last {
            guard let id = UUID(uuidString: last) else {
                throw RecordStoreError(
                    code: .malformedRecord, operation: self.operation, path: path,
                    detail: "sync_state holds a malformed device.last_operation '\(last)'")
            }
            operation = id
        }
        let seen = try syncStateInteger("server.seen") ?? computedSyncSeen()
        return SyncChain(
            lastOperation: operation, lastSequence: try syncStateInteger("device.last_sequence") ?? 0, seen: seen)
    }

    /// Stores `chain`, never moving it back: the last operation only for a later sequence, the
    /// version seen only upwards (another client of the store may have stored more meanwhile).
    func advanceSyncChain(to chain: SyncChain) throws {
        let stored = try syncChain()
        if let operation = chain.lastOperation, chain.lastSequence > stored.lastSequence {
            try setSyncState("device.last_operation", operation.uuidString)
            try setSyncState("device.last_sequence", integer: chain.lastSequence)
        }
        let storedSeen = try syncStateInteger("server.seen")
        if chain.seen > stored.seen || storedSeen == nil {
            try setSyncState("server.seen", integer: max(chain.seen, stored.seen))
        }
    }

    /// The highest server version the store holds anywhere: its cursor, its records' server
    /// versions, values kept aside, conflicts.
    private func computedSyncSeen() throws -> Int64 {
        let counter = try syncStateInteger("cursor.counter") ?? 0
        let stored = try run {
            try connection.withStatement(
                """
                SELECT max(coalesce((SELECT max(server_version) FROM sync_records), 0),
                           coalesce((SELECT max(aside_version) FROM sync_records), 0),
                           coalesce((SELECT max(server_version) FROM sync_conflicts), 0))
                """
            ) { statement in
                try statement.step() ? statement.int64(at: 0) : 0
            }
        }
        return max(counter, stored)
    }

    /// Takes a new device id for this store file, in the caller's transaction: the pending
    /// operations get new ids (their sequences, changes and bases stay: each is still based on
    /// the server version the device last saw, so an edit made meanwhile on the server is a
    /// conflict), the chain starts again, and the file's identity is stored with the id.
    /// Returns the previous device id and the number of operations given new ids.
    func takeNewSyncDevice() throws -> (previous: String?, device: String, reissued: Int) {
        let previous = try syncStateString("device")
        let device = UUID().uuidString
        let seen = try syncChain().seen
        try setSyncState("device", device)
        try setSyncState("device.file", syncFileMarker)
        try setSyncState("device.last_operation", nil)
        try setSyncState("device.last_sequence", nil)
        try setSyncState("server.seen", integer: seen)
        let sequences: [Int64] = try run {
            try connection.withStatement("SELECT sequence FROM sync_operations ORDER BY sequence") { statement in
                var sequences: [Int64] = []
                while try statement.step() { sequences.append(statement.int64(at: 0)) }
                return sequences
            }
        }
        for sequence in sequences {
            try run {
                try connection.withStatement("UPDATE sync_operations SET id = ?2 WHERE sequence = ?1") { statement in
                    try statement.bind(sequence, at: 1)
                    try statement.bind(UUID().uuidString, at: 2)
                    try statement.run()
                }
            }
        }
        return (previous, device, sequences.count)
    }
}
