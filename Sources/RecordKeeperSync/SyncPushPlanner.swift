package import Foundation

/// A record's identity within a space.
package struct SyncRecordKey: Hashable, Sendable {
    package var collection: String
    package var key: String

    package init(collection: String, key: String) {
        self.collection = collection
        self.key = key
    }
}

/// A record as a sync server keeps it: value, version, and who wrote it on which base (for the
/// own-write rule of ``SyncWritePolicy/compareAndSet``).
package struct SyncStoredRecord: Hashable, Sendable {
    package var value: SyncValue
    package var version: SyncServerVersion
    /// The device of the operation that last wrote the record.
    package var writerDevice: String
    /// The base version that operation's change was based on.
    package var writerBase: SyncServerVersion?
    /// The item version the payload was written at (``SyncChange/itemVersion``).
    package var itemVersion: Int?

    package init(
        value: SyncValue, version: SyncServerVersion, writerDevice: String,
        writerBase: SyncServerVersion?, itemVersion: Int? = nil
    ) {
        self.value = value
        self.version = version
        self.writerDevice = writerDevice
        self.writerBase = writerBase
        self.itemVersion = itemVersion
    }

    package var state: SyncRecordState { SyncRecordState(value: value, version: version, itemVersion: itemVersion) }
}

/// What a server holds of one device: the last operation it recorded (applied or conflicting).
package struct SyncDeviceState: Hashable, Sendable {
    package var lastSequence: Int64
    /// The id of that operation; nil only for devices recorded before the chain existed whose
    /// last operation could not be found.
    package var lastOperation: UUID?
    /// The highest sequence of the device whose operation outcome a compaction deleted (0:
    /// none): an operation at or below it that the server holds no outcome for was received
    /// before, and is answered ``SyncResult/compacted(_:)``, never applied again.
    package var compactedSequence: Int64

    package init(lastSequence: Int64, lastOperation: UUID?, compactedSequence: Int64 = 0) {
        self.lastSequence = lastSequence
        self.lastOperation = lastOperation
        self.compactedSequence = compactedSequence
    }
}

/// What a push may read before deciding: the space's state for the operations of the push.
/// A server loads it inside its push transaction, after taking the space's counter lock.
package struct SyncPushState: Sendable {
    /// The space's change counter.
    package var counter: Int64
    /// Outcomes already recorded for operation ids of the push (with the device and sequence
    /// they were recorded for).
    package var recorded: [UUID: SyncOutcome]
    /// The last recorded operation of each device of the push that has one.
    package var devices: [String: SyncDeviceState]
    /// The current records the push's changes name (absent: never written in this space, or
    /// deleted and its tombstone compacted).
    package var records: [SyncRecordKey: SyncStoredRecord]
    /// The space's compaction horizon: tombstones at or below it were deleted.
    package var horizon: Int64

    package init(
        counter: Int64, recorded: [UUID: SyncOutcome] = [:], devices: [String: SyncDeviceState] = [:],
        records: [SyncRecordKey: SyncStoredRecord] = [:], horizon: Int64 = 0
    ) {
        self.horizon = horizon
        self.counter = counter
        self.recorded = recorded
        self.devices = devices
        self.records = records
    }
}

/// An operation to record as received, with the outcome it got.
package struct SyncRecordedOperation: Sendable {
    package var id: UUID
    package var device: String
    package var sequence: Int64
    package var outcome: SyncOutcome
}

/// One record a push writes: its final state, and whether it existed before the push (a
/// server creates it, or changes it).
package struct SyncRecordWrite: Sendable {
    package var id: SyncRecordKey
    package var record: SyncStoredRecord
    package var existed: Bool
}

/// What a push writes, decided from its operations and the ``SyncPushState``.
package struct SyncPushPlan: Sendable {
    /// One outcome per pushed operation, in push order.
    package var outcomes: [SyncOutcome]
    /// Operations received for the first time (applied or conflicting), to record.
    package var newOperations: [SyncRecordedOperation]
    /// The final state of every record the push wrote, once each, in the order the push first
    /// wrote them (a server inserts them in that order: for an upload, key order, which fills
    /// the indexes sequentially).
    package var writes: [SyncRecordWrite]
    /// The new last operation of every device that had an operation recorded.
    package var devices: [String: SyncDeviceState]
    /// The space's counter after the push.
    package var counter: Int64
}

/// The rules of a push, in one place for every server implementation: deduplication by id,
/// per-device order and chain, compare-and-set with the own-write rule, last-writer-wins,
/// whole-or-nothing operations, one counter value per applied operation.
package enum SyncPushPlanner {
    /// Decides `operations` against `state`.
    ///
    /// - Throws: ``SyncError`` (``SyncError/Code/serverFailure``) when the space's counter has
    ///   no next value (it is at `Int64.max`): nothing of the push may be written.
    package static func plan(
        _ operations: [SyncOperation], state: SyncPushState, space: String
    ) throws(SyncError) -> SyncPushPlan {
        // What this push decided so far lives beside `state` (never written into it: the
        // caller still holds it, so a write would copy its dictionaries first). Each change
        // hashes its record's key at most three times: the lookups in what the push wrote and
        // in `state`, and the first write.
        var counter = state.counter
        guard counter >= 0 else {
            throw SyncError(.serverFailure, "the change counter of space \(space) is negative (\(counter)): nothing was applied")
        }
        var decided: [UUID: SyncOutcome] = [:]
        var devices = state.devices
        var writes: [SyncRecordWrite] = []
        var written: [SyncRecordKey: Int] = [:]  // index in `writes`
        var outcomes: [SyncOutcome] = []
        var newOperations: [SyncRecordedOperation] = []
        var changedDevices: [String: SyncDeviceState] = [:]
        let changeCount = operations.reduce(0) { $0 + $1.changes.count }
        outcomes.reserveCapacity(operations.count)
        newOperations.reserveCapacity(operations.count)
        decided.reserveCapacity(operations.count)
        writes.reserveCapacity(changeCount)
        written.reserveCapacity(changeCount)
        var conflicts: [SyncConflict] = []
        // Per change of the current operation: its key, and where the push wrote it before
        // (nil: not yet; then whether it existed before the push).
        var lookups: [(id: SyncRecordKey, index: Int?, existed: Bool)] = []
        for operation in operations {
            if var outcome = state.recorded[operation.id] ?? decided[operation.id] {
                outcome.isRedelivery = true
                outcomes.append(outcome)
                continue
            }
            let device = devices[operation.device]
            if let device, operation.sequence <= device.compactedSequence {
                // Received before the horizon, its outcome since compacted: answered with the
                // records' current state, never applied twice.
                let current = operation.changes.map { change in
                    let id = SyncRecordKey(collection: change.collection, key: change.key)
                    let record = written[id].map { writes[$0].record } ?? state.records[id]
                    return SyncConflict(collection: change.collection, key: change.key, base: change.base, server: record?.state)
                }
                outcomes.append(SyncOutcome(operation, result: .compacted(current), isRedelivery: true))
                continue
            }
            if !follows(operation, device) {
                outcomes.append(SyncOutcome(operation, result: .outOfOrder(lastSequence: device?.lastSequence ?? 0)))
                continue
            }
            conflicts.removeAll(keepingCapacity: true)
            lookups.removeAll(keepingCapacity: true)
            for change in operation.changes {
                let id = SyncRecordKey(collection: change.collection, key: change.key)
                let index = written[id]
                let current = index.map { writes[$0].record } ?? state.records[id]
                lookups.append((id, index, current != nil))
                if !accepts(change, of: operation, current: current, horizon: state.horizon) {
                    conflicts.append(
                        SyncConflict(
                            collection: change.collection, key: change.key, base: change.base,
                            server: current?.state))
                }
            }
            let result: SyncResult
            if conflicts.isEmpty {
                guard counter < Int64.max - 1 else {
                    throw SyncError(
                        .serverFailure,
                        "the change counter of space \(space) is at its maximum (\(counter)): operation "
                            + "\(operation.id.uuidString) cannot get a version; nothing of the push was applied")
                }
                counter += 1
                let version = SyncServerVersion(counter)
                for (change, lookup) in zip(operation.changes, lookups) {
                    let record = SyncStoredRecord(
                        value: change.value, version: version, writerDevice: operation.device,
                        writerBase: change.base, itemVersion: change.itemVersion)
                    if let index = lookup.index {
                        writes[index].record = record
                    } else {
                        written[lookup.id] = writes.count
                        writes.append(SyncRecordWrite(id: lookup.id, record: record, existed: lookup.existed))
                    }
                }
                result = .applied(version)
            } else {
                result = .conflict(conflicts)
            }
            let outcome = SyncOutcome(operation, result: result)
            decided[operation.id] = outcome
            let last = SyncDeviceState(
                lastSequence: operation.sequence, lastOperation: operation.id,
                compactedSequence: device?.compactedSequence ?? 0)
            devices[operation.device] = last
            changedDevices[operation.device] = last
            newOperations.append(
                SyncRecordedOperation(
                    id: operation.id, device: operation.device, sequence: operation.sequence,
                    outcome: outcome))
            outcomes.append(outcome)
        }
        return SyncPushPlan(
            outcomes: outcomes, newOperations: newOperations, writes: writes,
            devices: changedDevices, counter: counter)
    }

    /// Whether `operation` may come next for its device: its sequence is above the device's
    /// last recorded one, and its predecessor (when checked) is that operation.
    static func follows(_ operation: SyncOperation, _ device: SyncDeviceState?) -> Bool {
        if let device, operation.sequence <= device.lastSequence { return false }
        switch operation.predecessor {
        case .unchecked: return true
        case .firstOfDevice: return device == nil
        case .operation(let id): return device?.lastOperation == id
        }
    }

    /// Whether `change` of `operation` may overwrite `current` (nil: the record was never
    /// written, or was deleted and its tombstone compacted under `horizon`).
    ///
    /// A change based on a version at or below the horizon of a record the server no longer
    /// has applies: the record was deleted and its tombstone compacted, so nothing on the
    /// server is overwritten (a device that saw the deletion writes the record again; one that
    /// edited it concurrently brings it back instead of conflicting: docs/SYNC.md).
    static func accepts(
        _ change: SyncChange, of operation: SyncOperation, current: SyncStoredRecord?, horizon: Int64
    ) -> Bool {
        // An older shape never replaces a newer one, whatever the policy: a payload written at
        // a lower item version over a payload written at a higher one is a conflict (the
        // device keeps its value in the conflict and takes the server's). Tombstones and
        // byte-level data (no item version) are not compared.
        if let written = change.itemVersion, change.value.payload != nil, let current,
            let stored = current.itemVersion, current.value.payload != nil, written < stored
        {
            return false
        }
        if change.policy == .lastWriterWins { return true }
        guard let current else { return change.base.map { $0.rawValue <= horizon } ?? true }
        if current.version == change.base { return true }
        // The own-write rule: the device sent this change before it learned the version its
        // previous change of the record got; both were based on the same version and nobody
        // else wrote the record in between. Only for a checked chain: it proves the previous
        // write came from the same store, not from a copy writing under the same device id.
        return operation.predecessor.isChecked && current.writerDevice == operation.device
            && current.writerBase == change.base
    }
}
