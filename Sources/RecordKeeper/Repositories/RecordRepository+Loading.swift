import Foundation

/// The result of ``RecordRepository/loadPartial()``: the items that decoded, and the records
/// that did not (or were written by a newer app), each with its key and error. Never a
/// silently shorter list.
public struct PartialLoad<Item: Sendable>: Sendable {
    /// The items that decoded, sorted by record key.
    public var items: [Item]
    /// The records that did not decode, sorted by key. They stay in the store as they are.
    public var skipped: [SkippedRecord]

    /// True when every stored record decoded.
    public var isComplete: Bool { skipped.isEmpty }

    /// Creates a result.
    public init(items: [Item], skipped: [SkippedRecord]) {
        self.items = items
        self.skipped = skipped
    }
}

extension PartialLoad: Equatable where Item: Equatable {}

/// A record ``RecordRepository/loadPartial()`` could not turn into an item.
public struct SkippedRecord: Sendable, Equatable {
    /// The record's key.
    public let key: String
    /// Why it was skipped: `undecodableRecord` or `keyMismatch`, with the underlying error, or
    /// `newerItemVersion` for a record written by a newer version of the app on another device
    /// (pulled by sync; its ``RepositoryError/itemVersion`` says which), never read as this
    /// version's type.
    public let error: RepositoryError

    /// Creates a value.
    public init(key: String, error: RepositoryError) {
        self.key = key
        self.error = error
    }

    public static func == (lhs: SkippedRecord, rhs: SkippedRecord) -> Bool {
        lhs.key == rhs.key && lhs.error.code == rhs.error.code
    }
}

extension RecordRepository {
    /// The items that decode, with the key and error of every record that does not: for a
    /// screen that prefers to show what it can. ``load()`` is the all-or-error form.
    ///
    /// The skipped records stay in the store exactly as they are. Only the decoded items'
    /// versions become the base of later saves: the skipped keys count as unseen, so saving an
    /// item under such a key conflicts (``RecordConflict``) instead of silently replacing the
    /// record; pass ``ConflictPolicy/overwrite`` to replace it on purpose.
    ///
    /// ```swift
    /// let result = try await books.loadPartial()
    /// shelf = result.items
    /// for skipped in result.skipped { log("cannot read \(skipped.key): \(skipped.error)") }
    /// ```
    /// - Throws: ``RepositoryError`` when the collection has a newer item version or its
    ///   migration fails (a migration is all or nothing, never partial); ``RecordStoreError``.
    public func loadPartial() async throws -> PartialLoad<Item> {
        await takeTurn()
        defer { turns.release() }
        let loaded = try await currentItems(partial: true) ?? LoadedItems<Item>()
        versions = KnownVersions(loadedKeys: loaded.keys, versions: loaded.versions)
        learnStoreWrites(except: Set(loaded.skipped.map(\.key)))
        return PartialLoad(items: loaded.items, skipped: loaded.skipped)
    }

    /// Like ``load()``, but nil when the collection was never established (or was removed), and
    /// then creates nothing: no store file and no directory, like ``RecordStore/read(_:)``.
    /// An established collection without items gives `[]`.
    /// - Throws: as ``load()``.
    public func loadIfPresent() async throws -> [Item]? {
        await takeTurn()
        defer { turns.release() }
        guard await store.isPresent(), let loaded = try await currentItems(partial: false) else {
            versions = KnownVersions()
            return nil
        }
        return try remember(loaded)
    }

    /// Which versions of a load's or a query's items become the base of later saves.
    package enum RememberedVersions: Sendable {
        /// Every item's (an explicit read: `load`, `query`).
        case all
        /// Only those of items the repository knows nothing of (neither a version nor that they
        /// are absent); a known version is never moved on (an observed query's runs and a
        /// followed model's refreshes, which come by themselves after other writers' commits:
        /// a save based on an older copy must still conflict with them).
        case unknownOnly
    }

    /// `load()`, remembering the versions `remembering` says: with `.unknownOnly` (a model's
    /// refresh for a change it follows), a version the repository knows is never moved on and
    /// no known key is forgotten, so a save based on an older copy still conflicts.
    package func load(remembering: RememberedVersions) async throws -> [Item] {
        guard remembering == .unknownOnly else { return try await load() }
        await takeTurn()
        defer { turns.release() }
        let loaded = try await currentItems(partial: false) ?? LoadedItems<Item>()
        if let failure = loaded.failure { throw failure }
        learnStoreWrites()
        for (key, version) in zip(loaded.keys, loaded.versions) where !versions.knows(key) {
            versions[key] = version
        }
        return loaded.items
    }

    /// The items of a whole load, whose versions become the base of later saves; its failure
    /// (the first record that did not decode, or one written by a newer app) throws, and then
    /// nothing is remembered.
    func remember(_ loaded: LoadedItems<Item>) throws -> [Item] {
        if let failure = loaded.failure { throw failure }
        versions = KnownVersions(loadedKeys: loaded.keys, versions: loaded.versions)
        learnStoreWrites()
        return loaded.items
    }
}

/// What one read of a whole collection gives a load (see `currentItems(partial:)`).
struct LoadedItems<Item: Sendable>: Sendable {
    /// The decoded items, in key order.
    var items: [Item] = []
    /// The decoded items' keys and versions, in the same order.
    var keys: [String] = []
    var versions: [RecordVersion] = []
    /// The records skipped by a partial load, in key order.
    var skipped: [SkippedRecord] = []
    /// Why a load that skips nothing failed (then it has no items).
    var failure: RepositoryError?
}

extension LoadedItems {
    /// Takes a decoded chunk of `window` in key order: its items with their keys and versions,
    /// and (`partial`) its failures as skipped records. Without `partial`, the chunk's first
    /// failure is returned, and nothing after it is taken.
    mutating func take(_ chunk: LoadWindow.Chunk<Item>, of window: LoadWindow, partial: Bool) -> RepositoryError? {
        guard !chunk.failures.isEmpty else {
            items.append(contentsOf: chunk.items)
            keys.append(contentsOf: window.keys[chunk.range])
            versions.append(contentsOf: window.versions[chunk.range])
            return nil
        }
        var decoded = chunk.items.makeIterator()
        var failures = chunk.failures.makeIterator()
        var failure = failures.next()
        for position in chunk.range {
            if let found = failure, found.position == position {
                guard partial else { return found.error }
                skipped.append(SkippedRecord(key: window.keys[position], error: found.error))
                failure = failures.next()
            } else if let item = decoded.next() {
                items.append(item)
                keys.append(window.keys[position])
                versions.append(window.versions[position])
            }
        }
        return nil
    }
}

/// The answer of a load's read transaction.
enum LoadRead<Item: Sendable>: Sendable {
    /// The collection holds older items: migrate, then read again.
    case needsMigration
    case loaded(LoadedItems<Item>)
}
