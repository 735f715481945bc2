import Foundation

/// The state of one write transaction: the versions it gives the records it inserts, what it
/// removed, and where its changes come from. What it changes is told to the store's
/// ``TransactionObserver``s (the change log, sync capture, the outbox's wake-up, the
/// repositories' learned versions), which the core runs around it (`StoreCore.performWrite`).
///
/// Versions (format 1, see docs/FORMAT.md): an update gives a record its previous version + 1;
/// an insert gives it `floor + 1`, where the floor (`store_meta.last_version`) is at least every
/// version a removed record ever had. So a key's version only grows, even across removal and
/// re-creation, and the floor is written only by transactions that remove records: a
/// transaction that only updates writes nothing but the records themselves.
final class WriteContext {
    let engine: RecordEngine
    /// Where the changes made now come from (see `withOrigin(_:_:)`).
    private(set) var origin: TransactionOrigin
    /// The store's observers, in their order of registration.
    let observers: [any TransactionObserver]
    /// The identity of the store file the transaction writes (nil in memory).
    let fileIdentity: StoreFileIdentity?
    /// Collections this transaction already looked up (see `remember(_:for:)`).
    private var knownCollections: [String: CollectionRef] = [:]
    /// The stored floor, read on first need.
    private var storedFloor: Int64?
    /// The floor including the versions this transaction removed.
    private var floor: Int64?
    /// How many records this transaction removed (a delete reports whether it removed one).
    private(set) var removedRecords = 0

    init(
        engine: RecordEngine, origin: TransactionOrigin, observers: [any TransactionObserver],
        fileIdentity: StoreFileIdentity? = nil
    ) {
        self.engine = engine
        self.origin = origin
        self.observers = observers
        self.fileIdentity = fileIdentity
    }

    /// Runs `body` with its changes coming from `origin` (a repository's migration rewriting
    /// records inside a save, which sync must not capture), then restores the origin.
    func withOrigin<T>(_ origin: TransactionOrigin, _ body: () throws -> T) rethrows -> T {
        let saved = self.origin
        self.origin = origin
        defer { self.origin = saved }
        return try body()
    }

    /// The registered observer of type `O`, for a feature to reach its own observer from inside
    /// a transaction (the outbox notes that it enqueued).
    func observer<O: TransactionObserver>(_ type: O.Type) -> O? {
        for observer in observers {
            if let match = observer as? O { return match }
        }
        return nil
    }

    /// The version a record inserted now gets.
    private func insertVersion(_ collection: String) throws -> Int64 {
        let floor = try currentFloor()
        guard floor < Int64.max else {
            // Only a damaged or edited file holds it (a removed record's version raised it).
            throw engine.records.runner.malformed(
                collection: collection,
                "the store's version floor is the largest there is (\(floor)), so no new record can be given a version")
        }
        return floor + 1
    }

    private func currentFloor() throws -> Int64 {
        if let floor { return floor }
        let stored = try engine.records.lastVersion()
        storedFloor = stored
        floor = stored
        return stored
    }

    /// Raises the floor above a version that was just removed.
    private func removed(version: Int64) throws {
        let current = try currentFloor()
        if version > current { floor = version }
    }

    /// Stores the raised floor, if removals raised it. Call before committing (before the
    /// observers' `transactionWillCommit`).
    func finish() throws {
        if let floor, let storedFloor, floor > storedFloor { try engine.records.setLastVersion(floor) }
    }

    // MARK: Operations (names already validated and normalized)

    /// Notes the id of `collection`, found by a check earlier in this transaction, so that the
    /// write that follows needs no second lookup.
    func remember(_ ref: CollectionRef, for collection: String) {
        knownCollections[collection] = ref
    }

    /// The id of `collection` and its sync flag, creating it when it is not established.
    private func establish(_ collection: String) throws -> CollectionRef {
        if let ref = knownCollections[collection] { return ref }
        return try engine.records.establishForWriting(collection)
    }

    /// Removes and upserts; with `expected`, checks that each named key still has the stated
    /// version (nil: absent) and throws `RecordConflict`, naming every conflicting key, if not
    /// (the transaction then rolls back: nothing is written). With `expected` (even empty),
    /// returns the version of each upserted key afterwards.
    @discardableResult
    func apply(
        _ collection: String, upserts: [RecordUpsert], removals: [String],
        expecting expected: [String: RecordVersion?]? = nil
    ) throws -> [String: RecordVersion] {
        guard let expected else {
            let ref = try establish(collection)
            try tellRecordsWillChange(collection, ref: ref, upserts: upserts, removals: removals)
            try remove(removals, ref: ref, collection: collection)
            try upsertUnconditionally(upserts, ref: ref, collection: collection)
            return [:]
        }
        // The expectation of each upserted key (one lookup per key), and how many there are.
        var expectations: [RecordVersion??] = []
        expectations.reserveCapacity(upserts.count)
        var matched = 0
        for upsert in upserts {
            let expectation = expected[upsert.key]
            if expectation != nil { matched += 1 }
            expectations.append(expectation)
        }
        // Expectations about keys not upserted here (removals, or keys only checked).
        var checks: [String: RecordVersion?] = [:]
        if matched < expected.count {
            var written = Set<String>(minimumCapacity: upserts.count)
            for upsert in upserts { written.insert(upsert.key) }
            for (key, version) in expected where !written.contains(key) { checks[key] = .some(version) }
        }
        let written = try apply(
            collection, upserts: upserts, expectations: expectations, removals: removals, checks: checks)
        var versions: [String: RecordVersion] = [:]
        versions.reserveCapacity(upserts.count)
        for (upsert, version) in zip(upserts, written) { versions[upsert.key] = version }
        return versions
    }

    /// The conditional write itself, with each upsert's expectation beside it (`nil`: none,
    /// `.some(nil)`: must be absent, `.some(v)`: must have version `v`), and `checks` for keys
    /// not upserted. Returns each upsert's version afterwards, in the order of `upserts`.
    func apply(
        _ collection: String, upserts: [RecordUpsert], expectations: [RecordVersion??],
        removals: [String], checks: [String: RecordVersion?]
    ) throws -> [RecordVersion?] {
        let ref = try establish(collection)
        let id = ref.id
        try tellRecordsWillChange(collection, ref: ref, upserts: upserts, removals: removals)
        var conflicts: [String: RecordVersion?] = [:]
        var expectedVersions: [String: RecordVersion?] = [:]
        for (key, version) in checks {
            let current = try engine.records.version(id, collection: collection, key: key)
            if current != version {
                conflicts[key] = .some(current)
                expectedVersions[key] = .some(version)
            }
        }
        if conflicts.isEmpty { try remove(removals, ref: ref, collection: collection) }
        // Upserts: one conditional statement per key (a plain insert for a key expected
        // absent, an update of the expected version otherwise), a lookup only when it wrote
        // nothing. After a conflict, the remaining keys are only checked, to name them all.
        var versions: [RecordVersion?] = []
        versions.reserveCapacity(upserts.count)
        for (upsert, expectation) in zip(upserts, expectations) {
            let (key, data) = (upsert.key, upsert.data)
            guard let version = expectation else {
                // Whatever is stored: an update of the version stored now (inside the transaction
                // nothing changes it meanwhile), or an insert at the floor, read only then.
                guard conflicts.isEmpty else { continue }
                if let current = try engine.records.version(id, collection: collection, key: key) {
                    if let new = try engine.records.updateIfVersion(
                        id, collection: collection, key: key, data: data, expected: current.rawValue)
                    {
                        try log(collection, key, ref)
                        versions.append(RecordVersion(new))
                    } else {
                        versions.append(current)  // stored byte for byte already
                    }
                } else {
                    let insertVersion = try insertVersion(collection)
                    if try engine.records.insertIfAbsent(id, collection: collection, key: key, data: data, version: insertVersion) {
                        try log(collection, key, ref)
                        versions.append(RecordVersion(insertVersion))
                    } else {
                        // Not reached: the lookup said it was absent.
                        versions.append(try engine.records.version(id, collection: collection, key: key))
                    }
                }
                continue
            }
            if !conflicts.isEmpty {
                let current = try engine.records.version(id, collection: collection, key: key)
                if current != version {
                    conflicts[key] = .some(current)
                    expectedVersions[key] = .some(version)
                }
                continue
            }
            if let version {
                if let new = try engine.records.updateIfVersion(
                    id, collection: collection, key: key, data: data, expected: version.rawValue)
                {
                    try log(collection, key, ref)
                    versions.append(RecordVersion(new))
                    continue
                }
                let current = try engine.records.version(id, collection: collection, key: key)
                if current == version {
                    versions.append(version)  // stored byte for byte already
                } else {
                    conflicts[key] = .some(current)
                    expectedVersions[key] = .some(version)
                }
            } else {
                let insertVersion = try insertVersion(collection)
                if try engine.records.insertIfAbsent(id, collection: collection, key: key, data: data, version: insertVersion) {
                    try log(collection, key, ref)
                    versions.append(RecordVersion(insertVersion))
                } else {
                    conflicts[key] = .some(try engine.records.version(id, collection: collection, key: key))
                    expectedVersions[key] = .some(nil)
                }
            }
        }
        if !conflicts.isEmpty {
            let action: RecordConflict.Action = upserts.isEmpty && !removals.isEmpty ? .delete : .save
            throw RecordConflict(
                collection: collection, currentVersions: conflicts, expectedVersions: expectedVersions, action: action)
        }
        return versions
    }

    private func remove(_ removals: [String], ref: CollectionRef, collection: String) throws {
        for key in removals {
            guard let removedVersion = try engine.records.remove(ref.id, collection: collection, key: key) else { continue }
            removedRecords += 1
            try removed(version: removedVersion)
            try log(collection, key, ref)
        }
    }

    private func upsertUnconditionally(
        _ upserts: [RecordUpsert], ref: CollectionRef, collection: String
    ) throws {
        let id = ref.id
        // A single save into a transaction that has not needed the floor: the statement
        // reads it itself.
        if upserts.count == 1, floor == nil, let upsert = upserts.first {
            let (key, data) = (upsert.key, upsert.data)
            if try engine.records.upsertAtStoredFloor(id, collection: collection, key: key, data: data) {
                try log(collection, key, ref)
            }
            return
        }
        guard !upserts.isEmpty else { return }
        let insertVersion = try insertVersion(collection)
        for upsert in upserts
        where try engine.records.upsert(
            id, collection: collection, key: upsert.key, data: upsert.data, insertVersion: insertVersion) {
            try log(collection, upsert.key, ref)
        }
    }

    /// Removes and upserts like `apply`, and reports what became of each key and the version of
    /// each upserted key afterwards. Costs one point lookup per upserted key (to tell an insert
    /// from an overwrite; it reads the version too, and an unchanged payload then needs no
    /// upsert), so only the public `apply` of the store and of a transaction uses it; for a
    /// single upsert that lookup is part of the collection's, so it costs what `apply` does.
    ///
    /// With `expected`, it is the conditional write of `apply(_:upserts:expectations:removals:checks:)`
    /// (a `RecordConflict` naming every conflicting key, nothing written): named keys cost what
    /// they cost there; a key it does not name costs one version lookup first, which becomes
    /// its expectation (inside the transaction it always holds, so the key is written as
    /// unconditionally as before, and the outcome tells what became of it).
    func applyReporting(
        _ collection: String, upserts: [RecordUpsert], removals: [String],
        expecting expected: [String: RecordVersion?]? = nil
    ) throws -> AppliedChanges {
        if upserts.isEmpty, !removals.isEmpty, try engine.records.collectionForWriting(collection) == nil {
            return try Self.removalsOnly(fromAbsent: collection, removals: removals, expecting: expected)
        }
        if let expected {
            return try applyReporting(collection, upserts: upserts, removals: removals, expected: expected)
        }
        if upserts.count == 1, removals.isEmpty, let upsert = upserts.first {
            let (key, data) = (upsert.key, upsert.data)
            return try applyReporting(collection, key: key, data: data)
        }
        // A collection established only now holds nothing: every upsert is an insert.
        let existing = try engine.records.collectionForWriting(collection)
        let ref = try existing ?? engine.records.establishForWriting(collection)
        let id = ref.id
        try tellRecordsWillChange(collection, ref: ref, upserts: upserts, removals: removals)
        var applied = AppliedChanges()
        for key in removals {
            guard let removedVersion = try engine.records.remove(id, collection: collection, key: key) else {
                applied.notFound.append(key)
                continue
            }
            removedRecords += 1
            try removed(version: removedVersion)
            try log(collection, key, ref)
            applied.removed.append(key)
        }
        applied.versions.reserveCapacity(upserts.count)
        for upsert in upserts {
            let (key, data) = (upsert.key, upsert.data)
            let stored = existing == nil
                ? nil : try engine.records.storedPayload(id, collection: collection, key: key, comparedTo: data)
            if let stored, stored.equal {
                applied.unchanged.append(key)
                applied.versions[key] = RecordVersion(stored.version)
                continue
            }
            // The upsert gives an overwrite the stored version + 1 and an insert the version
            // given here: the floor is read only when an insert needs it (an overwrite leaves
            // the value unused, so it gets the version the overwrite gives).
            let version = try stored.map {
                try engine.records.version(after: $0.version, collection: collection, key: key)
            } ?? insertVersion(collection)
            if try engine.records.upsert(id, collection: collection, key: key, data: data, insertVersion: version) {
                try log(collection, key, ref)
                if stored == nil { applied.added.append(key) } else { applied.changed.append(key) }
                applied.versions[key] = RecordVersion(version)
            } else {
                applied.unchanged.append(key)  // not reached: the lookup said it would write
                applied.versions[key] = try engine.records.version(id, collection: collection, key: key)
            }
        }
        return applied
    }

    /// An apply that only removes keys of a collection that is not established (or of a store
    /// that does not exist yet): like `delete`, it establishes nothing. Every key is not found,
    /// so an expectation of a version (anything but "absent") is a conflict.
    static func removalsOnly(
        fromAbsent collection: String, removals: [String], expecting expected: [String: RecordVersion?]?
    ) throws -> AppliedChanges {
        var current: [String: RecordVersion?] = [:]
        var expectedVersions: [String: RecordVersion?] = [:]
        for (key, version) in expected ?? [:] where version != nil {
            current[key] = .some(nil)
            expectedVersions[key] = .some(version)
        }
        guard current.isEmpty else {
            throw RecordConflict(
                collection: collection, currentVersions: current, expectedVersions: expectedVersions, action: .delete)
        }
        var applied = AppliedChanges()
        applied.notFound = removals
        return applied
    }

    /// `applyReporting` of a single upsert: one statement to find the collection and the
    /// record, one to write, as `apply` makes for it; an insert into a transaction that has not
    /// read the version floor reads it first, to know the version it gives (one `SELECT` of
    /// `store_meta`, cheaper than the statement's `RETURNING` it replaces, see `updateIfVersion`).
    private func applyReporting(_ collection: String, key: String, data: Data) throws -> AppliedChanges {
        let found = try engine.records.collectionForWriting(collection, record: key, comparedTo: data)
        let ref = try found?.ref ?? engine.records.establishForWriting(collection)
        let stored = found?.stored
        try tellRecordsWillChange(collection, ref: ref, upserts: [RecordUpsert(key: key, data: data)], removals: [])
        var applied = AppliedChanges()
        if let stored, stored.equal {
            applied.unchanged.append(key)
            applied.versions[key] = RecordVersion(stored.version)
            return applied
        }
        let written: Int64?
        if let stored {
            // An overwrite: the statement's insert version goes unused.
            let version = try engine.records.version(after: stored.version, collection: collection, key: key)
            written = try engine.records.upsert(ref.id, collection: collection, key: key, data: data, insertVersion: version)
                ? version : nil
        } else {
            let version = try insertVersion(collection)
            written = try engine.records.upsert(ref.id, collection: collection, key: key, data: data, insertVersion: version)
                ? version : nil
        }
        guard let written else {
            applied.unchanged.append(key)  // not reached: the lookup said it would write
            applied.versions[key] = try engine.records.version(ref.id, collection: collection, key: key)
            return applied
        }
        try log(collection, key, ref)
        if stored == nil { applied.added.append(key) } else { applied.changed.append(key) }
        applied.versions[key] = RecordVersion(written)
        return applied
    }

    /// `applyReporting` with expectations: every upsert gets one (the stated one, or the
    /// version found now), so each outcome says whether it was added, changed or unchanged.
    private func applyReporting(
        _ collection: String, upserts: [RecordUpsert], removals: [String],
        expected: [String: RecordVersion?]
    ) throws -> AppliedChanges {
        let ref = try establish(collection)
        remember(ref, for: collection)
        let id = ref.id
        // A key is never both upserted and removed (`RecordChanges` keeps it on one side).
        var expectations: [RecordVersion??] = []
        expectations.reserveCapacity(upserts.count)
        var matched = 0
        for upsert in upserts {
            let key = upsert.key
            if let expectation = expected[key] {
                matched += 1
                expectations.append(expectation)
            } else {
                expectations.append(.some(try engine.records.version(id, collection: collection, key: key)))
            }
        }
        // Expectations about keys not upserted here (removals, or keys only checked), checked
        // by the conditional write; a removal without one is looked up, to report it.
        var checks: [String: RecordVersion?] = [:]
        if matched < expected.count {
            var written = Set<String>(minimumCapacity: upserts.count)
            for upsert in upserts { written.insert(upsert.key) }
            for (key, version) in expected where !written.contains(key) { checks[key] = .some(version) }
        }
        var stored: [Bool] = []
        stored.reserveCapacity(removals.count)
        for key in removals {
            if let expectation = checks[key] {
                stored.append(expectation != nil)  // holds once the write did not conflict
            } else {
                stored.append(try engine.records.version(id, collection: collection, key: key) != nil)
            }
        }
        let written = try apply(
            collection, upserts: upserts, expectations: expectations, removals: removals, checks: checks)
        var applied = AppliedChanges()
        for (key, wasStored) in zip(removals, stored) {
            if wasStored { applied.removed.append(key) } else { applied.notFound.append(key) }
        }
        applied.versions.reserveCapacity(upserts.count)
        for ((upsert, expectation), version) in zip(zip(upserts, expectations), written) {
            let key = upsert.key
            guard let version else { continue }  // only after a conflict, which threw
            applied.versions[key] = version
            switch expectation {
            case .some(nil): applied.added.append(key)
            case .some(let before?) where before == version: applied.unchanged.append(key)
            default: applied.changed.append(key)
            }
        }
        return applied
    }

    /// Makes `values` the whole content of `collection`.
    func replace(_ collection: String, values: [RecordUpsert]) throws {
        let id = try engine.records.establishForWriting(collection).id
        let existing = try engine.records.versions(id, collection: collection)
        var removals: [String] = []
        if !existing.isEmpty {
            var kept = Set<String>(minimumCapacity: values.count)
            for entry in values { kept.insert(entry.key) }
            removals = existing.keys.filter { !kept.contains($0) }
        }
        try apply(collection, upserts: values, removals: removals)
    }

    func removeCollection(_ collection: String) throws {
        knownCollections[collection] = nil
        guard let ref = try engine.records.collectionForWriting(collection) else { return }
        let id = ref.id
        let observed = ObservedCollection(name: collection, ref: ref)
        for observer in observers { try observer.collectionWillBeRemoved(observed, in: self) }
        // Every key, so that streams deliver the removal of each (and a synced collection's
        // removal travels as a tombstone per record), when an observer wants them.
        if observers.contains(where: { $0.observesRemoval(of: observed, in: self) }) {
            for key in try engine.records.versions(id, collection: collection).keys { try log(collection, key, ref) }
        }
        if let highest = try engine.records.highestVersion(id, collection: collection) { try removed(version: highest) }
        try engine.records.removeCollection(id, name: collection)
    }

    /// Tells the observers that `key` of `collection` changed (inserted, updated or removed).
    private func log(_ collection: String, _ key: String, _ ref: CollectionRef) throws {
        let observed = ObservedCollection(name: collection, ref: ref)
        for observer in observers { try observer.recordDidChange(observed, key: key, in: self) }
    }

    /// Tells the observers that the named keys of `collection` are about to change.
    private func tellRecordsWillChange(
        _ collection: String, ref: CollectionRef, upserts: [RecordUpsert], removals: [String]
    ) throws {
        let observed = ObservedCollection(name: collection, ref: ref)
        for observer in observers {
            try observer.recordsWillChange(observed, upserting: upserts, removing: removals, in: self)
        }
    }
}
