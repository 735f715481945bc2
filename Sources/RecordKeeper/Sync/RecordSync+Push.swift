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
    ///
    /// When the server applied every operation of a batch, its outcomes are applied locally
    /// while the next batch is read and sent, so the local transactions overlap the server's
    /// time. The next batch is then rebased on those outcomes (a record the batch changed gets
    /// the version the server gave it, as the local transaction records it), so it carries the
    /// bases it would have had if read afterwards. Any other outcome (a conflict, an operation
    /// out of order) is applied before anything more is read. Outcomes are applied in order, one
    /// batch at a time, and the call waits for the one in flight before it returns or throws.
    func push(_ settings: SyncSettings, into report: inout SyncReport) async throws {
        var after: Int64 = 0
        var applying: Task<SyncPushBatchResult, any Error>?
        var prefetched: [PendingSyncOperation]?
        do {
            while true {
                let batch: [PendingSyncOperation]
                if let next = prefetched {
                    batch = next
                    prefetched = nil
                } else {
                    batch = try await pendingBatch(after: after)
                }
                guard let last = batch.last else { break }
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
                if let previous = applying {
                    applying = nil
                    try Self.merge(try await previous.value, settings, into: &report)
                }
                let store = self.store
                let current = Task {
                    try await store.performWrite(.syncPush, collection: nil) { context in
                        try Self.apply(outcomes, of: batch, in: context)
                    }
                }
                applying = current
                after = last.sequence
                if let acknowledged = Self.acknowledgedVersions(outcomes, of: batch) {
                    prefetched = Self.rebase(try await pendingBatch(after: after), on: acknowledged)
                } else {
                    applying = nil
                    try Self.merge(try await current.value, settings, into: &report)
                }
            }
        } catch {
            // No local transaction outlives the call: the one in flight finishes first (an
            // error of its own comes first, it happened first).
            if let previous = applying {
                switch await previous.result {
                case .success(let result): try Self.merge(result, settings, into: &report)
                case .failure(let applyError): throw applyError
                }
            }
            throw error
        }
        if let previous = applying {
            try Self.merge(try await previous.value, settings, into: &report)
        }
    }

    /// The server version each record of `batch` takes when every operation was applied (the
    /// last operation's, for a record several change); nil when any outcome is not `.applied`.
    static func acknowledgedVersions(
        _ outcomes: [SyncOutcome], of batch: [PendingSyncOperation]
    ) -> [SyncRecordKey: SyncServerVersion]? {
        var versions: [SyncRecordKey: SyncServerVersion] = [:]
        for (operation, outcome) in zip(batch, outcomes) {
            guard case .applied(let version) = outcome.result else { return nil }
            for change in operation.changes {
                versions[SyncRecordKey(collection: change.collection, key: change.key)] = version
            }
        }
        return versions
    }

    /// `batch` with the base of every change of an acknowledged record set to the version the
    /// acknowledgement gave it (what `sync_records` holds once it is applied).
    static func rebase(
        _ batch: [PendingSyncOperation], on acknowledged: [SyncRecordKey: SyncServerVersion]
    ) -> [PendingSyncOperation] {
        guard !acknowledged.isEmpty else { return batch }
        return batch.map { operation in
            var operation = operation
            operation.changes = operation.changes.map { change in
                guard let version = acknowledged[SyncRecordKey(collection: change.collection, key: change.key)] else {
                    return change
                }
                return PendingSyncChange(
                    collection: change.collection, key: change.key, value: change.value, base: version,
                    policy: change.policy)
            }
            return operation
        }
    }

    /// Adds what applying one batch did to the report; throws when the server refused an
    /// operation as out of order.
    private static func merge(
        _ result: SyncPushBatchResult, _ settings: SyncSettings, into report: inout SyncReport
    ) throws {
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
                    // The first operation goes whatever its size; of a later one, no more is
                    // read than tells whether it still fits (one past the room left).
                    let room = batch.isEmpty ? Int.max : Self.pushChangeLimit - changeCount
                    let changes = try engine.pendingSyncChanges(sequence, limit: room == Int.max ? room : room + 1)
                    if changes.isEmpty { continue }
                    if changes.count > room { break }
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
                // Set-wise: a newer server value kept aside wins over the acknowledged change
                // (read first, written last); every other record takes the version.
                let asides = try engine.newerAsides(of: operation.sequence, than: version.rawValue)
                try engine.acknowledgeSyncChanges(of: operation.sequence, version: version.rawValue)
                for aside in asides {
                    try write(aside.value, to: aside.record, in: context)
                    try engine.setServerVersion(aside.record, aside.version, clearingAside: true)
                }
                try engine.deleteSyncOperation(operation.sequence)
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
                    var server = conflict.server?.value ?? .tombstone
                    var serverVersion = conflict.server?.version
                    // A redelivered operation gets the conflict of its first delivery: a newer
                    // server value pulled since (kept aside) is the server's current one.
                    if let aside = try engine.aside(record), aside.version > serverVersion?.rawValue ?? 0 {
                        server = aside.value
                        serverVersion = SyncServerVersion(aside.version)
                    }
                    if local != server.payload {
                        let kept = SyncRecordConflict(
                            collection: record.collection, key: record.key, local: local, server: server.payload,
                            serverVersion: serverVersion)
                        try engine.recordSyncConflict(kept)
                        result.conflicts.append(kept)
                        try write(server, to: record, in: context)
                    }
                    try engine.setServerVersion(record, serverVersion?.rawValue, clearingAside: true)
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
