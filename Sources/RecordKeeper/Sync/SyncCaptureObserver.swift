import Foundation

/// Captures the changes of synced collections as sync operations (format 5), as a
/// ``TransactionObserver`` of one store's write transactions: the records of synced collections
/// a transaction changed, in first-change order, are written as one operation just before it
/// commits, in the same transaction.
///
/// Changes whose origin is sync itself (pulled values, sync's bookkeeping) or a repository's
/// migration are not captured (`TransactionOrigin.isCapturedForSync`): no echo.
final class SyncCaptureObserver: TransactionObserver {
    /// The records of synced collections the running transaction changed, in first-change order.
    private var captured: [SyncRecordKey] = []
    private var capturedSet: Set<SyncRecordKey> = []

    func recordDidChange(_ collection: ObservedCollection, key: String, in transaction: WriteContext) throws {
        guard collection.synced, transaction.origin.isCapturedForSync else { return }
        let record = SyncRecordKey(collection: collection.name, key: key)
        if capturedSet.insert(record).inserted { captured.append(record) }
    }

    func observesRemoval(of collection: ObservedCollection, in transaction: WriteContext) -> Bool {
        collection.synced && transaction.origin.isCapturedForSync
    }

    func transactionWillCommit(_ transaction: WriteContext) throws {
        if !captured.isEmpty { try transaction.engine.syncQueue.capture(captured) }
    }

    func transactionDidCommit(_ transaction: WriteContext) { reset() }

    func transactionDidRollBack(_ transaction: WriteContext) { reset() }

    private func reset() {
        guard !captured.isEmpty else { return }
        captured.removeAll(keepingCapacity: true)
        capturedSet.removeAll(keepingCapacity: true)
    }
}
