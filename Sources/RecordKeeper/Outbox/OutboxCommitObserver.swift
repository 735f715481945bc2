import Foundation

/// Wakes the store's outbox processors after the commit of a transaction that enqueued
/// operations, as a ``TransactionObserver`` of the store's write transactions (see
/// `OutboxSignal`). The outbox's enqueue tells it (`WriteContext.enqueue`); a rolled-back
/// enqueue wakes nobody.
final class OutboxCommitObserver: TransactionObserver {
    let signal: OutboxSignal
    /// The running transaction enqueued operations.
    private var enqueued = false

    init(signal: OutboxSignal) {
        self.signal = signal
    }

    /// The running transaction enqueued operations.
    func noteEnqueued() {
        enqueued = true
    }

    func transactionDidCommit(_ transaction: WriteContext) {
        guard enqueued else { return }
        enqueued = false
        signal.notify()
    }

    func transactionDidRollBack(_ transaction: WriteContext) {
        enqueued = false
    }
}
