import Foundation

/// What one transaction noted about a collection for the repositories that learn it.
struct LearnedCollection {
    /// Whether a repository on this store learns the collection (asked once per transaction).
    let isLearned: Bool
    /// Per key named by the transaction: the version before its first change in it, and
    /// (filled in by `finishLearning()`) the version at commit.
    var changes: [String: VersionChange] = [:]
}

extension WriteContext {
    /// Whether this transaction notes the versions it changes in `collection`: only writes
    /// through the store's own record API, and only for collections a repository learns.
    private func learns(_ collection: String) -> Bool {
        guard teachesRepositories, let learned else { return false }
        if let known = learning[collection] { return known.isLearned }
        let isLearned = learned.isLearned(collection)
        learning[collection] = LearnedCollection(isLearned: isLearned)
        return isLearned
    }

    /// Notes the version each named key has before this transaction first changes it (one
    /// point lookup per key, only when `learns(collection)`).
    func noteVersionsBefore(
        _ collection: String, id: Int64, upserts: [(key: String, data: Data)], removals: [String]
    ) throws {
        guard learns(collection), var entry = learning[collection] else { return }
        for (key, _) in upserts where entry.changes[key] == nil {
            entry.changes[key] = VersionChange(before: try engine.version(id, collection: collection, key: key))
        }
        for key in removals where entry.changes[key] == nil {
            entry.changes[key] = VersionChange(before: try engine.version(id, collection: collection, key: key))
        }
        learning[collection] = entry
    }

    /// Notes the version of every record of a collection about to be removed.
    func noteVersionsBeforeRemoving(_ collection: String, id: Int64) throws {
        guard learns(collection), var entry = learning[collection] else { return }
        for (key, version) in try engine.versions(id, collection: collection) where entry.changes[key] == nil {
            entry.changes[key] = VersionChange(before: version)
        }
        learning[collection] = entry
    }

    /// Reads, inside the transaction and just before its commit, the version every noted key
    /// has now (nil: absent). The collection is looked up by name again: it may have been
    /// removed and established anew in this transaction.
    func finishLearning() throws {
        for (collection, entry) in learning where entry.isLearned && !entry.changes.isEmpty {
            let id = try engine.collectionID(collection)
            var updated = entry
            for key in entry.changes.keys {
                updated.changes[key]?.after = try id.flatMap { try engine.version($0, collection: collection, key: key) }
            }
            learning[collection] = updated
        }
    }

    /// After the commit: tells the repositories what changed (keys whose version stayed, such
    /// as an upsert of identical bytes, are left out).
    func teachRepositories() {
        guard let learned else { return }
        var changes: [String: [String: VersionChange]] = [:]
        for (collection, entry) in learning where entry.isLearned {
            let changed = entry.changes.filter { $0.value.before != $0.value.after }
            if !changed.isEmpty { changes[collection] = changed }
        }
        if !changes.isEmpty { learned.deliver(changes) }
    }
}
