import Foundation

/// What one transaction noted about a collection for the repositories that learn it.
struct LearnedCollection {
    /// Whether a repository on this store learns the collection (asked once per transaction).
    let isLearned: Bool
    /// Per key named by the transaction: the version before its first change in it, and
    /// (filled in by `transactionWillCommit`) the version at commit.
    var changes: [String: VersionChange] = [:]
}

/// Tells the repositories on a store the versions that writes through the store's own record
/// API give records (see `LearnedVersions`), as a ``TransactionObserver`` of the store's write
/// transactions: only transactions of origin `.recordAPI`, only collections a repository
/// learns.
final class LearningObserver: TransactionObserver {
    private let learned: LearnedVersions
    /// Per collection, for the running transaction: whether a repository learns it, and the
    /// version changes seen so far.
    private var learning: [String: LearnedCollection] = [:]

    /// Whether some repository learned any collection when the running transaction first
    /// changed a record (nil: not asked yet in this transaction). Without one, the
    /// transaction notes nothing and allocates nothing for it; with one, each collection is
    /// asked about once, when the transaction first changes it. A repository that registers
    /// after a transaction's first change (before: after its first change to that
    /// repository's collection) misses that transaction's changes: its next save may then
    /// meet a conflict it would not have met, never a change it should not take.
    private var active: Bool?

    init(learned: LearnedVersions) {
        self.learned = learned
    }

    func transactionDidBegin(_ transaction: WriteContext) throws {
        active = nil
    }

    /// Whether the running transaction notes the versions it changes in `collection`.
    private func learns(_ collection: String, in transaction: WriteContext) -> Bool {
        guard transaction.origin == .recordAPI else { return false }
        if active == nil { active = learned.hasRepositories }
        guard active == true else { return false }
        if let known = learning[collection] { return known.isLearned }
        let isLearned = learned.isLearned(collection)
        learning[collection] = LearnedCollection(isLearned: isLearned)
        return isLearned
    }

    /// Notes the version each named key has before this transaction first changes it (one
    /// point lookup per key, only when the collection is learned).
    func recordsWillChange(
        _ collection: ObservedCollection, upserting upserts: [RecordUpsert], removing removals: [String],
        in transaction: WriteContext
    ) throws {
        guard learns(collection.name, in: transaction), var entry = learning[collection.name] else { return }
        let engine = transaction.engine
        for upsert in upserts where entry.changes[upsert.key] == nil {
            entry.changes[upsert.key] = VersionChange(
                before: try engine.records.version(collection.id, collection: collection.name, key: upsert.key))
        }
        for key in removals where entry.changes[key] == nil {
            entry.changes[key] = VersionChange(before: try engine.records.version(collection.id, collection: collection.name, key: key))
        }
        learning[collection.name] = entry
    }

    /// Notes the version of every record of a collection about to be removed.
    func collectionWillBeRemoved(_ collection: ObservedCollection, in transaction: WriteContext) throws {
        guard learns(collection.name, in: transaction), var entry = learning[collection.name] else { return }
        for (key, version) in try transaction.engine.records.versions(collection.id, collection: collection.name)
        where entry.changes[key] == nil {
            entry.changes[key] = VersionChange(before: version)
        }
        learning[collection.name] = entry
    }

    /// Reads, inside the transaction and just before its commit, the version every noted key
    /// has now (nil: absent). The collection is looked up by name again (in the connection's
    /// `CollectionRefCache` first): it may have been removed and established anew in this
    /// transaction.
    func transactionWillCommit(_ transaction: WriteContext) throws {
        let engine = transaction.engine
        for (collection, entry) in learning where entry.isLearned && !entry.changes.isEmpty {
            let id = try engine.records.collectionIDForWriting(collection)
            var updated = entry
            for key in entry.changes.keys {
                updated.changes[key]?.after = try id.flatMap { try engine.records.version($0, collection: collection, key: key) }
            }
            learning[collection] = updated
        }
    }

    /// After the commit: tells the repositories what changed (keys whose version stayed, such
    /// as an upsert of identical bytes, are left out).
    func transactionDidCommit(_ transaction: WriteContext) {
        guard !learning.isEmpty else { return }
        var changes: [String: [String: VersionChange]] = [:]
        for (collection, entry) in learning where entry.isLearned {
            let changed = entry.changes.filter { $0.value.before != $0.value.after }
            if !changed.isEmpty { changes[collection] = changed }
        }
        learning.removeAll()
        if !changes.isEmpty { learned.deliver(changes) }
    }

    func transactionDidRollBack(_ transaction: WriteContext) {
        learning.removeAll()
    }
}
