public import Foundation

/// One step that brings a stored item from one version of its type to the next: from
/// ``fromVersion`` to `fromVersion + 1`.
///
/// Give a ``RecordRepository`` its current item version and the steps from every older version
/// still in people's hands; the repository migrates a collection's stored items the first
/// time it is used with a newer version (see ``RecordRepository/init(store:collection:itemVersion:migrations:coding:strategies:)``).
///
/// A step takes the stored JSON of one item, as a JSON object (``json(from:_:)``) or as data
/// (``data(from:_:)``), and returns the next version's form. It must be a pure function of its
/// input: it runs inside the store's write transaction, once per item, and must not call the
/// store. What it returns does not need to be canonical: the repository decodes the migrated
/// item as `Item` and stores its ``/RecordKeeperCoding/RecordCoding`` encoding, so a step that produces something
/// `Item` cannot decode fails the migration instead of storing it.
///
/// ```swift
/// // Version 2 of Book added `rating`.
/// let books = RecordRepository<Book>(
///     store: store, collection: "books", itemVersion: 2,
///     migrations: [
///         .json(from: 1) { book in book["rating"] = 0 }
///     ])
/// ```
public struct ItemMigrationStep: Sendable {
    /// The item version this step reads; it produces `fromVersion + 1`.
    public let fromVersion: Int
    /// Transforms one stored payload.
    let transform: @Sendable (Data) throws -> Data

    /// A step that rewrites the stored payload as data.
    public static func data(from version: Int, _ transform: @escaping @Sendable (Data) throws -> Data) -> ItemMigrationStep {
        ItemMigrationStep(fromVersion: version, transform: transform)
    }

    /// A step that edits the stored item as a JSON object (`[String: Any]` as
    /// `JSONSerialization` reads it). An item whose stored JSON is not an object fails the step.
    public static func json(
        from version: Int, _ transform: @escaping @Sendable (inout [String: Any]) throws -> Void
    ) -> ItemMigrationStep {
        ItemMigrationStep(fromVersion: version) { data in
            guard var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw NotAJSONObject()
            }
            try transform(&object)
            return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        }
    }

    /// The stored item is JSON, but not an object.
    struct NotAJSONObject: Error, CustomStringConvertible {
        var description: String { "the stored item is not a JSON object; use an ItemMigrationStep.data step" }
    }
}

/// Migrates one collection's stored items inside a write transaction: all or nothing.
struct ItemMigrator: Sendable {
    let collection: String
    /// The version the code writes.
    let currentVersion: Int
    /// The payload strategies the code writes with.
    let strategies: RecordCoding.Strategies
    /// The steps by the version they read.
    let steps: [Int: ItemMigrationStep]
    /// Makes the function that turns a migrated payload (and its key) into the stored form: it
    /// decodes it as the item type with the strategies the items were stored with (the
    /// argument) and encodes it with ``strategies``, throwing when it does not decode. Made
    /// once per migration, so its coders are reused for every item.
    let makeFinisher: @Sendable (RecordCoding.Strategies) -> (Data, String) throws -> Data

    /// Checks a plan of steps; the message says what is wrong with it.
    static func checkPlan(currentVersion: Int, migrations: [ItemMigrationStep]) -> [Int: ItemMigrationStep] {
        precondition(currentVersion >= 1, "an item version must be at least 1, not \(currentVersion)")
        var steps: [Int: ItemMigrationStep] = [:]
        for step in migrations {
            precondition(
                step.fromVersion >= 1 && step.fromVersion < currentVersion,
                "a migration step from item version \(step.fromVersion) does not lead to version \(currentVersion)")
            precondition(steps[step.fromVersion] == nil, "two migration steps from item version \(step.fromVersion)")
            steps[step.fromVersion] = step
        }
        return steps
    }

    /// The version a stored state stands for: a collection that never recorded one holds
    /// version 1 items (written before item versions existed, or by an app that never raised it).
    static func version(of state: StoredItemVersion) -> Int? {
        switch state {
        case .absent: return nil
        case .unrecorded: return 1
        case .recorded(let version, _): return version
        }
    }

    /// The payload strategies a stored state stands for (nil coding: Foundation's defaults).
    func storedStrategies(_ state: StoredItemVersion) throws -> RecordCoding.Strategies {
        guard case .recorded(_, let coding) = state else { return .default }
        guard let strategies = RecordCoding.Strategies(recorded: coding) else {
            throw RepositoryError(
                code: .codingMismatch, collection: collection,
                detail: "the items were written with payload strategies this version does not know "
                    + "(\(coding ?? "")), by a newer version of the app; nothing was changed")
        }
        return strategies
    }

    /// Whether a collection in `state` must be migrated; throws when it was written by a newer
    /// version of the app, or with other payload strategies at this item version. `records`:
    /// the versions single records hold of their own (pulled from devices running another
    /// version of the app); one below ``currentVersion`` needs a migration too.
    func needsMigration(_ state: StoredItemVersion, records: RecordItemVersions = .none) throws -> Bool {
        guard let found = Self.version(of: state) else { return false }
        if found > currentVersion { throw newerVersionError(found) }
        let stored = try storedStrategies(state)
        if found == currentVersion, stored != strategies { throw codingMismatchError(stored) }
        return found < currentVersion || records.lowest.map { $0 < currentVersion } == true
    }

    /// How many times a read migrates and reads again before giving up: a migration is
    /// followed by a read that checks again, since a sync pull may bring records of an older
    /// item version in between (they are never decoded as the current type).
    static let attempts = 4

    /// The error when records of an older item version kept arriving between migrations.
    func olderRecordsKeptArriving() -> RepositoryError {
        RepositoryError(
            code: .migrationFailed, collection: collection, itemVersion: currentVersion,
            detail: "records of an older item version kept arriving (pulled from a device on an older app) while the "
                + "collection was migrated \(Self.attempts - 1) times; nothing was decoded: try again")
    }

    /// The error for a record written by a newer app (a pulled value with a higher item
    /// version than this code knows): it is never decoded as this code's type.
    func newerRecordError(key: String, version: Int) -> RepositoryError {
        RepositoryError(
            code: .newerItemVersion, collection: collection, key: key, itemVersion: version,
            detail: "the record was written with item version \(version) by a newer version of the app (on another "
                + "device); this code knows versions up to \(currentVersion), so it is not read as this version's type")
    }

    /// Brings the collection to ``currentVersion`` in the running transaction and records the
    /// version (establishing the collection when it is absent). Throws, writing nothing the
    /// caller does not roll back, when a step fails, an item does not decode afterwards, a step
    /// is missing, or the stored version is newer.
    func run(in transaction: RecordTransaction) throws {
        let state = try transaction.storedItemVersion(of: collection)
        guard let found = Self.version(of: state) else {
            try transaction.setItemVersion(currentVersion, coding: strategies.recorded, of: collection)
            return
        }
        if found > currentVersion { throw newerVersionError(found) }
        let stored = try storedStrategies(state)
        if found == currentVersion, stored != strategies { throw codingMismatchError(stored) }
        let own = try transaction.recordItemVersions(of: collection)
        if found < currentVersion || own.values.contains(where: { $0 < currentVersion }) {
            try migrate(from: found, records: own, storedWith: stored, in: transaction)
            try transaction.clearRecordItemVersions(of: collection, upTo: currentVersion)
        }
        if state != .recorded(currentVersion, coding: strategies.recorded) {
            try transaction.setItemVersion(currentVersion, coding: strategies.recorded, of: collection)
        }
    }

    private func codingMismatchError(_ stored: RecordCoding.Strategies) -> RepositoryError {
        RepositoryError(
            code: .codingMismatch, collection: collection,
            detail: "the items were written with \(stored), and this repository reads and writes \(strategies); "
                + "nothing was changed")
    }

    /// The steps from `found` to ``currentVersion``.
    private func chain(from found: Int) throws -> [ItemMigrationStep] {
        var chain: [ItemMigrationStep] = []
        for version in found..<currentVersion {
            guard let step = steps[version] else {
                throw RepositoryError(
                    code: .missingMigrationStep, collection: collection, itemVersion: found,
                    detail: "no migration step from item version \(version) to \(version + 1) "
                        + "(the stored items have version \(found), the code writes version \(currentVersion)); "
                        + "nothing was changed")
            }
            chain.append(step)
        }
        return chain
    }

    /// Runs each record through the steps from its own version (`records`, else the
    /// collection's, `found`): a record already at ``currentVersion`` or above is left as it
    /// is, so a step never runs on a payload that is already past the version it starts from.
    /// The rewrites are not captured for sync: every device migrates on its own.
    private func migrate(
        from found: Int, records own: [String: Int], storedWith stored: RecordCoding.Strategies,
        in transaction: RecordTransaction
    ) throws {
        var chains: [Int: [ItemMigrationStep]] = [:]
        let finish = makeFinisher(stored)
        var upserts: [String: Data] = [:]
        try transaction.forEachRecord(in: collection) { record in
            let start = own[record.key] ?? found
            guard start < currentVersion else { return }
            let chain: [ItemMigrationStep]
            if let known = chains[start] {
                chain = known
            } else {
                chain = try self.chain(from: start)
                chains[start] = chain
            }
            var data = record.data
            for step in chain {
                do {
                    data = try step.transform(data)
                } catch {
                    throw RepositoryError(
                        code: .migrationFailed, collection: collection, key: record.key, underlying: error,
                        itemVersion: start,
                        detail: "the step from item version \(step.fromVersion) to \(step.fromVersion + 1) failed; "
                            + "nothing was changed")
                }
            }
            do {
                upserts[record.key] = try finish(data, record.key)
            } catch let error as RepositoryError {
                // The item's own decode error (undecodable, or stored under another ID's key).
                let problem = error.code == .keyMismatch ? "is stored under a key its ID does not give" : "does not decode"
                throw RepositoryError(
                    code: .migrationFailed, collection: collection, key: record.key,
                    underlying: error.underlying ?? error, itemVersion: start,
                    detail: "the item migrated to version \(currentVersion) \(problem); nothing was changed")
            }
        }
        try transaction.applyWithoutSyncCapture(collection, changes: RecordChanges(upserts: upserts))
    }

    /// The error for a collection whose items a newer app wrote, with version `found`.
    func newerVersionError(_ found: Int) -> RepositoryError {
        RepositoryError(
            code: .newerItemVersion, collection: collection, itemVersion: found,
            detail: "the items were written with item version \(found) by a newer version of the app; "
                + "this code knows versions up to \(currentVersion)")
    }
}
