import Foundation

/// Takes part in every write transaction of one store: the seam through which the change log,
/// sync capture, the outbox's wake-up and the repositories' learned versions plug into the
/// write path, so that the store core knows none of them by name (GRDB's
/// `TransactionObserver` is the model).
///
/// A transaction calls its observers in their order of registration:
/// 1. ``transactionDidBegin(_:)`` once the write transaction is open, before its first change;
/// 2. ``recordsWillChange(_:upserting:removing:in:)`` (or ``collectionWillBeRemoved(_:in:)``)
///    before it changes named records, and ``recordDidChange(_:key:in:)`` for each record it
///    inserted, changed or removed;
/// 3. ``transactionWillCommit(_:)`` after the body, inside the transaction: an observer may
///    still write there (its rows commit or roll back with the rest), and a throw rolls the
///    whole transaction back;
/// 4. ``transactionDidCommit(_:)`` after the commit, or ``transactionDidRollBack(_:)`` after a
///    rollback (also when an observer's own `transactionWillCommit` threw).
///
/// Every call comes with the store's writer lock held, on the thread running the transaction,
/// one transaction at a time: an observer keeps its per-transaction state in plain stored
/// properties, and resets it at the end of each transaction. Observers are not `Sendable` and
/// are only reached through `CoreState`, under that lock.
protocol TransactionObserver: AnyObject {
    /// The transaction is open and has changed nothing yet.
    func transactionDidBegin(_ transaction: WriteContext) throws
    /// The transaction is about to upsert and remove the named keys of `collection` (the
    /// input as given: an upsert of identical bytes may change nothing). Called before the
    /// first statement that changes them.
    func recordsWillChange(
        _ collection: ObservedCollection, upserting upserts: [RecordUpsert], removing removals: [String],
        in transaction: WriteContext) throws
    /// The transaction is about to remove `collection` and every record in it.
    func collectionWillBeRemoved(_ collection: ObservedCollection, in transaction: WriteContext) throws
    /// The transaction inserted, changed or removed `key` of `collection`.
    func recordDidChange(_ collection: ObservedCollection, key: String, in transaction: WriteContext) throws
    /// Whether this observer needs ``recordDidChange(_:key:in:)`` for every record of
    /// `collection` when it is removed whole (reading every key costs a scan otherwise saved).
    func observesRemoval(of collection: ObservedCollection, in transaction: WriteContext) -> Bool
    /// The body finished; the transaction is about to commit.
    func transactionWillCommit(_ transaction: WriteContext) throws
    /// The transaction committed.
    func transactionDidCommit(_ transaction: WriteContext)
    /// The transaction rolled back: nothing of it persists.
    func transactionDidRollBack(_ transaction: WriteContext)
    /// Whether the observer keeps something from one transaction to the next that it should
    /// let go of while the store is idle (the store then calls
    /// ``releaseBetweenTransactions()`` soon: see `StoreCore.scheduleRelease`).
    var holdsBetweenTransactions: Bool { get }
    /// Lets go of what the observer keeps between transactions: called between transactions,
    /// shortly after one that left ``holdsBetweenTransactions`` true, and when the store closes.
    func releaseBetweenTransactions()
}

extension TransactionObserver {
    func transactionDidBegin(_ transaction: WriteContext) throws {}
    func recordsWillChange(
        _ collection: ObservedCollection, upserting upserts: [RecordUpsert], removing removals: [String],
        in transaction: WriteContext
    ) throws {}
    func collectionWillBeRemoved(_ collection: ObservedCollection, in transaction: WriteContext) throws {}
    func recordDidChange(_ collection: ObservedCollection, key: String, in transaction: WriteContext) throws {}
    func observesRemoval(of collection: ObservedCollection, in transaction: WriteContext) -> Bool { false }
    func transactionWillCommit(_ transaction: WriteContext) throws {}
    func transactionDidCommit(_ transaction: WriteContext) {}
    func transactionDidRollBack(_ transaction: WriteContext) {}
    var holdsBetweenTransactions: Bool { false }
    func releaseBetweenTransactions() {}
}

/// A collection as observers see it: its normalized name, its row id and whether sync
/// captures its changes.
struct ObservedCollection {
    let name: String
    let ref: CollectionRef

    var id: Int64 { ref.id }
    var synced: Bool { ref.synced }
}

/// Where the changes of a write transaction (or of a part of it) come from, which decides what
/// observers make of them.
enum TransactionOrigin {
    /// The store's own record API (`put`, `apply`, `replace`, `delete`, `removeCollection`,
    /// `write`): captured for sync, and the versions it gives are taught to the repositories on
    /// the store (see `LearnedVersions`).
    case recordAPI
    /// Every other write of the library on behalf of the app: repositories and documents,
    /// the outbox, indexes. Captured for sync; teaches no repository.
    case library
    /// Sync itself: pulled changes and sync's bookkeeping. Never captured (no echo).
    case sync
    /// A repository's item migration rewriting stored records, which every device makes on its
    /// own (docs/SYNC.md "Item versions"). Never captured.
    case migration

    /// Whether sync captures changes of synced collections made with this origin.
    var isCapturedForSync: Bool {
        switch self {
        case .recordAPI, .library: true
        case .sync, .migration: false
        }
    }
}
