import Foundation

/// What one committed write through a store's own API did to one record's version: the
/// version it replaced and the one it left (nil: absent).
struct VersionChange: Sendable, Equatable {
    var before: RecordVersion?
    var after: RecordVersion? = nil
}

/// The versions that writes through one `RecordStore`'s own record API (`put`, `apply`,
/// `replace`, `delete`, `removeCollection`, `write`) give records, told to the repositories on
/// that store, so a repository's next write is not a conflict with the app itself.
///
/// Only those writes teach: a repository's or document's own writes, sync's, and writes by
/// other `RecordStore` instances or processes never do, so they stay conflicts for everyone
/// else. A repository takes a change only when the version it replaced is the one the
/// repository knew (see `RecordRepository.learnStoreWrites()`): a write on top of another
/// writer's change teaches nothing.
///
/// A transaction looks up the versions of the keys it names only for collections that have
/// a repository registered here (one lock and one dictionary lookup per collection otherwise).
///
/// Lock order: after the store's writer lock (delivery runs inside a commit), before no other.
final class LearnedVersions: Sendable {
    /// The inboxes of each collection, in a struct of their own: a `Protected` of the
    /// dictionary type itself made every store build that type's metadata when created, looking
    /// up `ObjectIdentifier: Hashable` in every loaded image (about 40 µs of a cold open whose
    /// first read takes 0.7 ms); a non-generic struct's metadata is static, and the
    /// dictionary's is built only when a repository first registers.
    private struct Inboxes {
        var byCollection: [String: [ObjectIdentifier: VersionInbox]] = Dictionary()
    }

    private let inboxes = Protected(Inboxes())

    /// Starts telling `inbox` about writes to `collection` (a normalized name).
    func register(_ inbox: VersionInbox, for collection: String) {
        inboxes.withLock { $0.byCollection[collection, default: [:]][ObjectIdentifier(inbox)] = inbox }
    }

    func unregister(_ inbox: VersionInbox, for collection: String) {
        inboxes.withLock { inboxes in
            inboxes.byCollection[collection]?[ObjectIdentifier(inbox)] = nil
            if inboxes.byCollection[collection]?.isEmpty == true { inboxes.byCollection[collection] = nil }
        }
    }

    /// Whether any repository learns the versions of some collection.
    var hasRepositories: Bool {
        inboxes.withLock { !$0.byCollection.isEmpty }
    }

    /// Whether some repository learns the versions of `collection`.
    func isLearned(_ collection: String) -> Bool {
        inboxes.withLock { $0.byCollection[collection] != nil }
    }

    /// Tells every repository of each collection what a committed transaction did. Called
    /// right after the commit, before the write returns to its caller, in commit order.
    func deliver(_ changes: [String: [String: VersionChange]]) {
        let targets = inboxes.withLock { inboxes in
            changes.keys.map { (collection: $0, inboxes: inboxes.byCollection[$0].map { Array($0.values) } ?? []) }
        }
        for target in targets {
            guard let changed = changes[target.collection] else { continue }
            for inbox in target.inboxes { inbox.append(changed) }
        }
    }
}

/// The changes one repository has not taken yet, one per key: a change that continues the
/// previous one (its `before` is the previous `after`) extends it, any other replaces it (the
/// chain is broken by a writer in between, so nothing older can be taken any more).
final class VersionInbox: Sendable {
    private let pending = Protected<[String: VersionChange]>([:])

    func append(_ changes: [String: VersionChange]) {
        pending.withLock { pending in
            for (key, change) in changes {
                if let previous = pending[key], previous.after == change.before {
                    pending[key] = VersionChange(before: previous.before, after: change.after)
                } else {
                    pending[key] = change
                }
            }
        }
    }

    /// Everything not taken yet, emptying the inbox.
    func drain() -> [String: VersionChange] {
        pending.withLock { pending in
            defer { pending = [:] }
            return pending
        }
    }
}
