import Foundation

/// What a store's sync settings say: the space and this device.
struct SyncSettings: Sendable {
    let space: String
    let device: String
}

/// What applying one push batch's outcomes did.
struct SyncPushBatchResult: Sendable {
    var answered = 0
    var changes = 0
    var conflicts: [SyncRecordConflict] = []
    /// The first operation the server refused as out of order, with the device's last applied sequence.
    var outOfOrder: (sequence: Int64, last: Int64)?
}

extension RecordSync {
    /// The stored space and device; throws when sync never started for the store.
    func settings() async throws -> SyncSettings {
        let settings = try await store.performRead(.syncPush, collection: nil) { source -> SyncSettings? in
            guard let engine = source.engine, try engine.hasSyncTables(),
                let space = try engine.syncStateString("space"), let device = try engine.syncStateString("device")
            else { return nil }
            return SyncSettings(space: space, device: device)
        }
        guard let settings else {
            throw SyncError(.invalidRequest, "sync has not started for this store: call start(space:collections:) first")
        }
        return settings
    }

    func storedCursor() async throws -> SyncCursor {
        try await store.performRead(.syncPull, collection: nil) { source in
            guard let engine = source.engine, try engine.hasSyncTables() else { return SyncCursor.start }
            return try engine.syncCursor()
        }
    }

    /// Pushes batch after batch until nothing is pending.
    func push(_ settings: SyncSettings, into report: inout SyncReport) async throws {
        var after: Int64 = 0
        while true {
            let batch = try await pendingBatch(after: after)
            guard let last = batch.last else { return }
            let operations = batch.map { pending in
                SyncOperation(
                    id: pending.id, device: settings.device, sequence: pending.sequence,
                    changes: pending.changes.map { change in
                        SyncChange(
                            collection: change.collection, key: change.key, value: change.value, base: change.base,
                            policy: change.policy == .lastWriterWins ? .lastWriterWins : .compareAndSet)
                    })
            }
            let outcomes = try await server.push(space: settings.space, operations: operations)
            guard outcomes.count == operations.count,
                zip(outcomes, operations).allSatisfy({ $0.operationID == $1.id })
            else {
                throw SyncError(
                    .serverFailure,
                    "the server answered \(operations.count) operations with \(outcomes.count) outcomes that do not match them")
            }
            let result = try await store.performWrite(.syncPush, collection: nil) { context in
                try Self.apply(outcomes, of: batch, in: context)
            }
            report.pushedOperations += result.answered
            report.pushedChanges += result.changes
            report.newConflicts += result.conflicts
            if let refused = result.outOfOrder {
                throw SyncError(
                    .serverFailure,
                    "the server refused operation \(refused.sequence) of device \(settings.device) as out of order: "
                        + "it already applied operation \(refused.last) of this device (was the store restored from an "
                        + "older copy?); the operation stays pending")
            }
            after = last.sequence
        }
    }

    /// The next pending operations after `after`, with their changes, from one snapshot.
    private func pendingBatch(after: Int64) async throws -> [PendingSyncOperation] {
        try await store.performRead(.syncPush, collection: nil) { source in
            guard let engine = source.engine, try engine.hasSyncTables() else { return [] }
            try engine.begin(immediate: false)
            do {
                var batch: [PendingSyncOperation] = []
                var changeCount = 0
                for (sequence, id) in try engine.pendingSyncOperations(after: after, limit: Self.pushOperationLimit) {
                    let changes = try engine.pendingSyncChanges(sequence)
                    if changes.isEmpty { continue }
                    if !batch.isEmpty, changeCount + changes.count > Self.pushChangeLimit { break }
                    batch.append(PendingSyncOperation(sequence: sequence, id: id, changes: changes))
                    changeCount += changes.count
                }
                try engine.commit()
                return batch
            } catch {
                try engine.rollback(after: error)
                throw error
            }
        }
    }

    /// Applies the server's outcomes of one batch, in one local transaction (capture off: this
    /// is bookkeeping and server values, not local changes).
    static func apply(
        _ outcomes: [SyncOutcome], of batch: [PendingSyncOperation], in context: WriteContext
    ) throws -> SyncPushBatchResult {
        context.capturesSync = false
        let engine = context.engine
        var result = SyncPushBatchResult()
        for (operation, outcome) in zip(batch, outcomes) {
            // Another process (or a push that lost its answer and ran again) handled it.
            guard try engine.isSyncOperationPending(operation.sequence) else { continue }
            switch outcome.result {
            case .applied(let version):
                result.answered += 1
                result.changes += operation.changes.count
                try engine.deleteSyncOperation(operation.sequence)
                for change in operation.changes {
                    let record = SyncRecordKey(collection: change.collection, key: change.key)
                    let laterPending = try engine.hasPendingSyncChange(record, besides: operation.sequence)
                    if !laterPending, let aside = try engine.aside(record), aside.version > version.rawValue {
                        // A newer server value arrived while this change was pending: it wins.
                        try write(aside.value, to: record, in: context)
                        try engine.setServerVersion(record, aside.version, clearingAside: true)
                    } else {
                        try engine.setServerVersion(record, version.rawValue, clearingAside: !laterPending)
                    }
                }
            case .conflict(let conflicts):
                result.answered += 1
                result.changes += operation.changes.count
                let carried = try engine.pendingSyncRecords(operation.sequence)
                let carriedSet = Set(carried)
                try engine.deleteSyncOperation(operation.sequence)
                var conflicting = Set<SyncRecordKey>()
                for conflict in conflicts {
                    let record = SyncRecordKey(collection: conflict.collection, key: conflict.key)
                    guard carriedSet.contains(record), conflicting.insert(record).inserted else { continue }
                    let local = try engine.record(record.collection, key: record.key)?.data
                    let server = conflict.server?.value ?? .tombstone
                    if local != server.payload {
                        let kept = SyncRecordConflict(
                            collection: record.collection, key: record.key, local: local, server: server.payload,
                            serverVersion: conflict.server?.version)
                        try engine.recordSyncConflict(kept)
                        result.conflicts.append(kept)
                        try write(server, to: record, in: context)
                    }
                    try engine.setServerVersion(record, conflict.server?.version.rawValue, clearingAside: true)
                    // The conflict holds the record's latest local value: later pending
                    // changes of it are superseded.
                    try engine.dropPendingSyncChanges(record, after: operation.sequence)
                }
                // The server applied none of the operation (whole or nothing): its other
                // changes go again, with their current values, unless a later operation
                // carries the record anyway.
                var again: [SyncRecordKey] = []
                for record in carried where !conflicting.contains(record) {
                    if try !engine.hasPendingSyncChange(record, besides: operation.sequence) { again.append(record) }
                }
                if !again.isEmpty { try engine.captureSyncOperation(again) }
            case .outOfOrder(let last):
                result.outOfOrder = (operation.sequence, last)
                return result
            }
        }
        return result
    }

    /// Makes `value` the record's local value (a tombstone removes it), through the write
    /// path, so change streams are told.
    static func write(_ value: SyncValue, to record: SyncRecordKey, in context: WriteContext) throws {
        switch value {
        case .payload(let data):
            try context.apply(record.collection, upserts: [(record.key, data)], removals: [])
        case .tombstone:
            guard try context.engine.collectionForWriting(record.collection) != nil else { return }
            try context.apply(record.collection, upserts: [], removals: [record.key])
        }
    }
}
