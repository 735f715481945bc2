import Foundation

/// What a store's sync settings say: the space and this device (and the new device id the
/// call took, when the store turned out to be a copy).
struct SyncSettings: Sendable {
    let space: String
    let device: String
    var recovery: SyncRecovery?
}

/// An operation the server refused as out of order: its sequence, the device's last recorded
/// sequence the server gave, and the predecessor it was sent with.
struct SyncRefusal: Sendable {
    let operation: UUID
    let sequence: Int64
    let last: Int64
    let predecessor: SyncPredecessor
}

/// What applying one push batch's outcomes did.
struct SyncPushBatchResult: Sendable {
    var answered = 0
    var changes = 0
    var conflicts: [SyncRecordConflict] = []
    /// The first operation the server refused as out of order.
    var refusal: SyncRefusal?
    /// Whether the batch's transaction captured an operation to push (a record dropped while
    /// on its way, whose kept value goes out again).
    var recaptured = false
}

extension RecordSync {
    /// The stored cursor, the highest server version the device has seen, the synced
    /// collections, and whether a resync (a pull from the start) is under way, read together.
    func storedPullState() async throws -> (
        cursor: SyncCursor, seen: Int64, collections: Set<String>, resyncing: Bool
    ) {
        try await store.performRead(.syncPull, collection: nil) { source in
            guard let engine = source.engine, try engine.syncState.exists() else { return (SyncCursor.start, 0, [], false) }
            return try engine.readTransaction {
                let state = (
                    try engine.syncState.cursor(), try engine.syncState.chain().seen, Set(try engine.syncState.collections().keys),
                    try engine.syncState.integer("pull.resync") != nil
                )
                return state
            }
        }
    }

    func storedCursor() async throws -> SyncCursor {
        try await storedPullState().cursor
    }

    /// The stored chain of this device's operations.
    private func storedChain() async throws -> SyncChain {
        try await store.performRead(.syncPush, collection: nil) { source in
            guard let engine = source.engine, try engine.syncState.exists() else {
                return SyncChain(lastOperation: nil, lastSequence: 0, seen: 0)
            }
            return try engine.syncState.chain()
        }
    }

    /// Pushes batch after batch until nothing is pending; when the server refuses an operation
    /// as out of order, tells why.
    ///
    /// A refusal after another client of the store file pushed meanwhile (the chain it stored
    /// is not the one the refused operation named) is tried once more from the stored chain.
    /// Otherwise the server's last sequence for the device says who is behind: below what this
    /// store knows it recorded, the server lost operations (``/RecordKeeperSync/SyncError/Code/serverFailure``);
    /// else another store wrote as this device (``/RecordKeeperSync/SyncError/Code/forkedDevice``).
    func push(_ settings: SyncSettings, into report: inout SyncReport) async throws {
        var retried = false
        while let refusal = try await pushBatches(settings, into: &report) {
            let stored = try await storedChain()
            if !retried, stored.predecessor != refusal.predecessor {
                retried = true
                continue
            }
            throw Self.refusalError(refusal, stored: stored, settings)
        }
    }

    private static func refusalError(_ refusal: SyncRefusal, stored: SyncChain, _ settings: SyncSettings) -> SyncError {
        let which = "operation \(refusal.operation.uuidString) (sequence \(refusal.sequence) of device \(settings.device))"
        if refusal.last < stored.lastSequence {
            return SyncError(
                .serverFailure,
                "space \(settings.space): the server refused \(which): its last recorded operation of this device is "
                    + "sequence \(refusal.last), but it had recorded sequence \(stored.lastSequence) of it: the server "
                    + "lost operations (was its database restored from an older backup?). Nothing of the refused "
                    + "operations was applied; they stay pending. What the server lost is not on the server any more: "
                    + "recover() (recordkeeper sync --recover) sends the pending operations as a new device, not the lost ones")
        }
        return SyncError(
            .forkedDevice,
            "space \(settings.space): the server refused \(which): another store synced as this device "
                + "(its last recorded operation of the device, sequence \(refusal.last), is not one this store made: "
                + "a backup or copy of this store file, or this store before it was restored, wrote it). Nothing of "
                + "the refused operations was applied; they stay pending. Run recover() (recordkeeper sync --recover): "
                + "the store syncs as a new device and sends them again, so that an edit the other store made "
                + "becomes a reported conflict")
    }

    /// Pushes batch after batch until nothing is pending or the server refused an operation
    /// as out of order (returned, after the batch's other outcomes were applied).
    ///
    /// When the server applied every operation of a batch, its outcomes are applied locally
    /// while the next batch is read and sent, so the local transactions overlap the server's
    /// time. The next batch is then rebased on those outcomes (a record the batch changed gets
    /// the version the server gave it, as the local transaction records it), so it carries the
    /// bases it would have had if read afterwards. Any other outcome (a conflict, an operation
    /// out of order) is applied before anything more is read. Outcomes are applied in order, one
    /// batch at a time, and the call waits for the one in flight before it returns or throws.
    ///
    /// Every operation names its predecessor: the first of a batch read from the store the
    /// store's chain, the others the operation before them; a batch read ahead continues the
    /// chain the checked outcomes gave.
    private func pushBatches(_ settings: SyncSettings, into report: inout SyncReport) async throws -> SyncRefusal? {
        var after: Int64 = 0
        var applying: Task<SyncPushBatchResult, any Error>?
        var prefetched: [PendingSyncOperation]?
        var chain = SyncChain(lastOperation: nil, lastSequence: 0, seen: 0)
        do {
            while true {
                let batch: [PendingSyncOperation]
                if let next = prefetched {
                    batch = next
                    prefetched = nil
                } else {
                    let read = try await pendingBatch(after: after)
                    batch = read.operations
                    chain = read.chain
                }
                guard let last = batch.last else {
                    // The outcomes being applied may capture an operation (a record to push
                    // again) after the read ahead found nothing: it goes too.
                    if let previous = applying {
                        applying = nil
                        let result = try await previous.value
                        Self.merge(result, into: &report)
                        if result.recaptured { continue }  // read from the store again
                    }
                    break
                }
                var predecessor = chain.predecessor
                let operations = batch.map { pending in
                    defer { predecessor = .operation(pending.id) }
                    return SyncOperation(
                        id: pending.id, device: settings.device, sequence: pending.sequence, predecessor: predecessor,
                        changes: pending.changes.map { change in
                            SyncChange(
                                collection: change.collection, key: change.key, value: change.value, base: change.base,
                                policy: change.policy == .lastWriterWins ? .lastWriterWins : .compareAndSet,
                                itemVersion: change.itemVersion)
                        })
                }
                let outcomes = try await server.push(space: settings.space, operations: operations)
                chain = try SyncAnswerCheck.outcomes(outcomes, of: operations, space: settings.space, chain: chain)
                if let previous = applying {
                    applying = nil
                    Self.merge(try await previous.value, into: &report)
                }
                let store = self.store
                let checked = chain
                let current = Task {
                    try await store.performWrite(.syncPush, collection: nil, origin: .sync) { context in
                        try Self.apply(outcomes, of: operations, batch, chain: checked, in: context)
                    }
                }
                applying = current
                after = last.sequence
                if let acknowledged = Self.acknowledgedVersions(outcomes, of: batch) {
                    prefetched = Self.rebase(try await pendingBatch(after: after).operations, on: acknowledged)
                } else {
                    applying = nil
                    let result = try await current.value
                    Self.merge(result, into: &report)
                    if let refusal = result.refusal { return refusal }
                }
            }
        } catch {
            // No local transaction outlives the call: the one in flight finishes first (an
            // error of its own comes first, it happened first).
            if let previous = applying {
                switch await previous.result {
                case .success(let result): Self.merge(result, into: &report)
                case .failure(let applyError): throw applyError
                }
            }
            throw error
        }
        if let previous = applying {
            Self.merge(try await previous.value, into: &report)
        }
        return nil
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
                    policy: change.policy, itemVersion: change.itemVersion)
            }
            return operation
        }
    }

    /// Adds what applying one batch did to the report.
    private static func merge(_ result: SyncPushBatchResult, into report: inout SyncReport) {
        report.pushedOperations += result.answered
        report.pushedChanges += result.changes
        report.newConflicts += result.conflicts
    }

    /// The next pending operations after `after`, with their changes, and the stored chain,
    /// from one snapshot.
    private func pendingBatch(after: Int64) async throws -> (operations: [PendingSyncOperation], chain: SyncChain) {
        try await store.performRead(.syncPush, collection: nil) { source in
            guard let engine = source.engine, try engine.syncState.exists() else {
                return ([], SyncChain(lastOperation: nil, lastSequence: 0, seen: 0))
            }
            return try engine.readTransaction {
                let chain = try engine.syncState.chain()
                var batch: [PendingSyncOperation] = []
                var changeCount = 0
                for (sequence, id) in try engine.syncQueue.operations(after: after, limit: Self.pushOperationLimit) {
                    // The first operation goes whatever its size; of a later one, no more is
                    // read than tells whether it still fits (one past the room left).
                    let room = batch.isEmpty ? Int.max : Self.pushChangeLimit - changeCount
                    let changes = try engine.syncQueue.changes(sequence, limit: room == Int.max ? room : room + 1)
                    if changes.isEmpty { continue }
                    if changes.count > room { break }
                    batch.append(PendingSyncOperation(sequence: sequence, id: id, changes: changes))
                    changeCount += changes.count
                }
                return (batch, chain)
            }
        }
    }

    /// An operation the server applied after this device dropped it (a conflict resolved by
    /// keeping the server's value while the edit was on its way): the server now holds the
    /// dropped values at `version`. Each of its records this device has not settled since
    /// (another process applying the answer, a pull) takes that version, and the value the
    /// device keeps goes out again on top of it (captured anew, unless a later local change
    /// is pending, which then carries it): the next pull does not bring the dropped edit back.
    /// Returns whether it captured an operation.
    private static func pushAgain(
        _ records: some Sequence<SyncRecordKey>, appliedAt version: Int64, in engine: RecordEngine
    ) throws -> Bool {
        var recapture: [SyncRecordKey] = []
        for record in records {
            let state = try engine.syncRecords.state(record)
            guard (state.serverVersion ?? 0) < version else { continue }
            try engine.syncRecords.setServerVersion(
                record, version, clearingAside: (state.asideVersion ?? 0) <= version)
            if try !engine.syncQueue.hasChange(record, besides: 0) { recapture.append(record) }
        }
        if !recapture.isEmpty { try engine.syncQueue.capture(recapture) }
        return !recapture.isEmpty
    }

    /// The item version of `record`'s stored value: its own (pulled at another version, not
    /// migrated since), else the one recorded for its collection; nil when none was recorded.
    static func currentItemVersion(of record: SyncRecordKey, in engine: RecordEngine) throws -> Int? {
        let (state, _, own) = try engine.itemVersions.recordWithItemVersion(record.collection, key: record.key)
        if let own { return own }
        if case .recorded(let version, _) = state { return version }
        return nil
    }

    /// The records `operation` changes, in its order.
    private static func records(of operation: SyncOperation) -> [SyncRecordKey] {
        operation.changes.map { SyncRecordKey(collection: $0.collection, key: $0.key) }
    }

    /// Applies the server's outcomes of one batch (checked by ``SyncAnswerCheck``), and the
    /// chain they give, in one local transaction (capture off: this is bookkeeping and server
    /// values, not local changes).
    static func apply(
        _ outcomes: [SyncOutcome], of sent: [SyncOperation], _ batch: [PendingSyncOperation], chain: SyncChain,
        in context: WriteContext
    ) throws -> SyncPushBatchResult {
        let engine = context.engine
        try engine.syncState.advanceChain(to: chain)
        let conflictsExist = try engine.conflicts.any()
        var indexed = IndexedCollections()
        var result = SyncPushBatchResult()
        for (index, (operation, outcome)) in zip(batch, outcomes).enumerated() {
            // Another process (or a push that lost its answer and ran again) handled it, or
            // it was dropped here while on its way.
            guard try engine.syncQueue.isPending(operation.sequence) else {
                if case .applied(let version) = outcome.result {
                    if try pushAgain(records(of: sent[index]), appliedAt: version.rawValue, in: engine) {
                        result.recaptured = true
                    }
                }
                continue
            }
            switch outcome.result {
            case .applied(let version):
                result.answered += 1
                result.changes += operation.changes.count
                // Records dropped from it while it was on its way (keeping the server's value
                // of a conflict; a conflict before it in this batch): the server holds what
                // was sent, as for a whole operation dropped.
                let carried = Set(try engine.syncQueue.records(operation.sequence))
                let dropped = records(of: sent[index]).filter { !carried.contains($0) }
                // Set-wise: a newer server value kept aside wins over the acknowledged change
                // (read first, written last); every other record takes the version.
                let asides = try engine.syncQueue.newerAsides(of: operation.sequence, than: version.rawValue)
                try engine.syncQueue.acknowledgeChanges(of: operation.sequence, version: version.rawValue)
                // A conflict of a record this device wrote again since (its write was made
                // after the conflict appeared, on the conflict's server version) is settled by
                // that write: resolving it later must never put the older value back.
                if conflictsExist { try engine.conflicts.delete(of: operation.sequence) }
                for aside in asides {
                    try write(aside.value, to: aside.record, in: context)
                    try engine.syncRecords.setServerVersion(aside.record, aside.version, clearingAside: true)
                    try engine.syncRecords.setItemVersion(aside.record, aside.value.payload == nil ? nil : aside.itemVersion)
                }
                try engine.syncQueue.delete(operation.sequence)
                if !dropped.isEmpty, try pushAgain(dropped, appliedAt: version.rawValue, in: engine) {
                    result.recaptured = true
                }
            case .conflict(let conflicts), .compacted(let conflicts):
                // A compacted outcome (received before, its outcome forgotten: it applied or
                // conflicted then, and is never applied again) names every record of the
                // operation with the server's current state: taken like a conflict's server
                // side, a record whose local value is the server's is settled, another one is a
                // reported conflict with both values kept.
                result.answered += 1
                result.changes += operation.changes.count
                let carried = try engine.syncQueue.records(operation.sequence)
                let carriedSet = Set(carried)
                try engine.syncQueue.delete(operation.sequence)
                var conflicting = Set<SyncRecordKey>()
                for conflict in conflicts {
                    let record = SyncRecordKey(collection: conflict.collection, key: conflict.key)
                    guard carriedSet.contains(record), conflicting.insert(record).inserted else { continue }
                    let local = try engine.records.payload(record.collection, key: record.key)
                    // The item version of the local value as it is now (a migration since the
                    // change was captured rewrote it), not the captured change's.
                    let localItemVersion = local == nil ? nil : try Self.currentItemVersion(of: record, in: engine)
                    var server = conflict.server?.value ?? .tombstone
                    var serverVersion = conflict.server?.version
                    var serverItemVersion = conflict.server?.itemVersion
                    // A redelivered operation gets the conflict of its first delivery: a newer
                    // server value pulled since (kept aside) is the server's current one.
                    if let aside = try engine.syncRecords.aside(record), aside.version > serverVersion?.rawValue ?? 0 {
                        server = aside.value
                        serverVersion = SyncServerVersion(aside.version)
                        serverItemVersion = aside.itemVersion
                    }
                    // nil: the record keeps its value, and the item version it has.
                    var itemVersion: Int?? = .some(server.payload == nil ? nil : serverItemVersion)
                    if local != server.payload {
                        let kept = SyncRecordConflict(
                            collection: record.collection, key: record.key, local: local, server: server.payload,
                            serverVersion: serverVersion, localItemVersion: localItemVersion,
                            serverItemVersion: serverItemVersion)
                        try engine.conflicts.record(kept)
                        result.conflicts.append(kept)
                        if try indexed.refuse(server, in: record.collection, engine: engine) {
                            // Not JSON, in a collection this store indexed: written, it would
                            // fail this batch and every push after it. The record keeps its
                            // local value; the conflict holds the server's.
                            itemVersion = nil
                        } else {
                            try write(server, to: record, in: context)
                        }
                    }
                    try engine.syncRecords.setServerVersion(record, serverVersion?.rawValue, clearingAside: true)
                    if let itemVersion { try engine.syncRecords.setItemVersion(record, itemVersion) }
                    // The conflict holds the record's latest local value: later pending
                    // changes of it are superseded.
                    try engine.syncQueue.dropChanges(record, after: operation.sequence)
                }
                // The server applied none of the operation (whole or nothing): its other
                // changes go again, with their current values, unless a later operation
                // carries the record anyway.
                var again: [SyncRecordKey] = []
                for record in carried where !conflicting.contains(record) {
                    if try !engine.syncQueue.hasChange(record, besides: operation.sequence) { again.append(record) }
                }
                if !again.isEmpty { try engine.syncQueue.capture(again) }
            case .outOfOrder(let last):
                result.refusal = SyncRefusal(
                    operation: operation.id, sequence: operation.sequence, last: last,
                    predecessor: sent[index].predecessor)
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
            try context.apply(record.collection, upserts: [RecordUpsert(key: record.key, data: data)], removals: [])
        case .tombstone:
            guard try context.engine.records.collectionForWriting(record.collection) != nil else { return }
            try context.apply(record.collection, upserts: [], removals: [record.key])
        }
    }
}
