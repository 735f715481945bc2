import Foundation

/// What one committed transaction changed in a repository's collection, as typed values, or,
/// after the stream fell behind the change log, the whole collection (``isFullState``).
public struct RepositoryChange<Item: Identifiable & Sendable>: Sendable where Item.ID: Sendable {
    /// Items inserted or changed, sorted by record key. In a full state: every item.
    public var upserted: [Item]
    /// IDs of items removed, sorted by record key. Empty in a full state.
    public var removed: [Item.ID]
    /// True when ``upserted`` is every item of the collection: replace your copy with it, since
    /// items removed meanwhile are not named (see ``RecordChanges/isFullState``).
    public var isFullState: Bool

    /// Creates a change value.
    public init(upserted: [Item] = [], removed: [Item.ID] = [], isFullState: Bool = false) {
        self.upserted = upserted
        self.removed = removed
        self.isFullState = isFullState
    }
}

extension RepositoryChange: Equatable where Item: Equatable {}

extension RepositoryChange where Item: Codable, Item.ID: Codable {
    /// `items`, a list in record-key order as ``RecordRepository/load()`` gives it, with this
    /// change applied: each upserted item replaces the item with its ID or goes in at its key's
    /// place, each removed ID is taken out. A full state (``isFullState``) replaces the list:
    /// the result is its items, in key order. So a screen can keep a loaded list current from
    /// the change stream without loading the collection again.
    ///
    /// ```swift
    /// var shelf = try await books.load()
    /// for try await change in await books.changes() { shelf = try change.applied(to: shelf) }
    /// ```
    /// - Complexity: O(*k* log *n*) key computations for *k* changed items, plus moving
    ///   elements to insert and remove; for large changes one merge pass, O(*n* + *k* log *k*).
    /// - Throws: ``RepositoryError`` (`unencodableValue`) when an item's ID has no record key.
    public func applied(to items: [Item]) throws -> [Item] {
        if isFullState { return upserted }  // every item, already in key order
        guard !upserted.isEmpty || !removed.isEmpty else { return items }
        // Upserts win over removals of the same key (a stream never names a key in both).
        var changes: [(key: [UInt8], item: Item?)] = []
        changes.reserveCapacity(upserted.count + removed.count)
        var named = Set<[UInt8]>()
        for item in upserted { let key = try Self.sortKey(item.id); if named.insert(key).inserted { changes.append((key, item)) } }
        for id in removed { let key = try Self.sortKey(id); if named.insert(key).inserted { changes.append((key, nil)) } }
        changes.sort { $0.key.lexicographicallyPrecedes($1.key) }
        if changes.count <= 16 {
            var result = items
            for change in changes {
                let (index, found) = try Self.position(of: change.key, in: result)
                switch (found, change.item) {
                case (true, let item?): result[index] = item
                case (true, nil): result.remove(at: index)
                case (false, let item?): result.insert(item, at: index)
                case (false, nil): break
                }
            }
            return result
        }
        var result: [Item] = []
        result.reserveCapacity(items.count + changes.count)
        var next = 0
        for item in items {
            let key = try Self.sortKey(item.id)
            while next < changes.count, changes[next].key.lexicographicallyPrecedes(key) {
                if let inserted = changes[next].item { result.append(inserted) }
                next += 1
            }
            if next < changes.count, changes[next].key == key {
                if let replacement = changes[next].item { result.append(replacement) }
                next += 1
            } else {
                result.append(item)
            }
        }
        for change in changes[next...] { if let item = change.item { result.append(item) } }
        return result
    }

    /// The stored (NFC) record key of `id` as UTF-8 bytes: the order of ``RecordRepository/load()``.
    private static func sortKey(_ id: Item.ID) throws -> [UInt8] {
        do {
            return Array(RecordNames.normalized(try RecordKeys.key(for: id)).utf8)
        } catch {
            throw RepositoryError(
                code: .unencodableValue, collection: "", underlying: error, detail: "the item ID \(id) has no record key")
        }
    }

    /// Where `key` is, or would go, in `items` (binary search), and whether it is there.
    private static func position(of key: [UInt8], in items: [Item]) throws -> (index: Int, found: Bool) {
        var low = 0, high = items.count
        while low < high {
            let middle = (low + high) / 2
            let middleKey = try sortKey(items[middle].id)
            if middleKey == key { return (middle, true) }
            if middleKey.lexicographicallyPrecedes(key) { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }
}

extension RecordRepository {
    /// What each committed transaction changes in the collection, decoded, in commit order.
    ///
    /// The stream is registered when this returns and follows ``RecordStore/changes(in:)``:
    /// one element per committed transaction that changed the collection while the consumer
    /// keeps up, the missed commits merged into one element (each item once, its latest state)
    /// when it falls behind, with only what actually changed (an item saved unchanged is left
    /// out); failed, rolled-back and empty writes yield nothing. Writes from every repository,
    /// from the store itself, from other stores on the same file and from other processes are
    /// included, not only this repository's.
    ///
    /// A changed record that does not decode, or a removed key that is no item ID, ends the
    /// stream by throwing ``RepositoryError`` (naming the key): it is never skipped. Load again
    /// to see the state, and call `changes()` again to keep listening. The changed records of an
    /// element with upserts are read again as ``load()`` reads them, when the element is read
    /// (so an item is as stored then: a later commit's value when the consumer fell behind, or
    /// left out when removed since, which a later element says):
    /// - after a change that leaves the collection's items at a newer item version than this
    ///   repository's (a newer app migrated them), or a changed record holding a newer one of
    ///   its own (pulled from a device running a newer app), the stream ends with
    ///   `newerItemVersion`: such records are never decoded as this version's items;
    /// - a collection recorded with other payload strategies ends it with `codingMismatch`;
    /// - a collection holding older items (a record pulled from a device running an older
    ///   app) is migrated first, as a load would, and the element holds the changed items as
    ///   migrated.
    ///
    /// A ``RecordStoreError`` reading the versions or migrating ends the stream too.
    ///
    /// A stream that fell far behind (see ``RecordStore/changes(in:)``) yields one element with
    /// ``RepositoryChange/isFullState`` set: every item, with the removed ones not named. A
    /// consumer keeping a copy replaces it then.
    ///
    /// The stream does not change the versions the repository bases its saves on: to save on
    /// top of a change someone else made, ``load()`` or ``item(_:)`` first.
    ///
    /// ```swift
    /// for try await change in await books.changes() {
    ///     if change.isFullState { shelf = [:] }
    ///     for book in change.upserted { shelf[book.id] = book }
    ///     for id in change.removed { shelf[id] = nil }
    /// }
    /// ```
    public nonisolated func changes() async -> RepositoryChanges<Item> {
        RepositoryChanges(
            records: await store.changes(in: collection), collection: collection, coding: coding, strategies: strategies,
            store: store, migrator: migrator)
    }

    /// Decodes one record-level change, with `upserts` in place of its own (see
    /// `readableUpserts(of:)`); the first failure throws.
    static func decode(
        _ change: RecordChanges, upserts: [String: Data], collection: String, decoder: PayloadCoder
    ) throws -> RepositoryChange<Item> {
        let byKey: (String, String) -> Bool = { $0 < $1 }  // code-point order = UTF-8 byte order
        var result = RepositoryChange<Item>(isFullState: change.isFullState)
        for key in upserts.keys.sorted(by: byKey) {
            guard let data = upserts[key] else { continue }
            result.upserted.append(try decode(data, key: key, collection: collection, decoder: decoder))
        }
        for key in change.removals.sorted(by: byKey) {
            guard let id = RecordKeys.id(forKey: key, as: Item.ID.self) else {
                throw RepositoryError(
                    code: .keyMismatch, collection: collection, key: key,
                    detail: "the removed record's key is not the key of any \(Item.ID.self)")
            }
            result.removed.append(id)
        }
        return result
    }
}

/// The typed change stream of a ``RecordRepository``: one ``RepositoryChange`` per committed
/// transaction that changed the collection, decoded as it is read.
///
/// The first record that does not decode ends the stream: `next()` throws
/// ``RepositoryError`` once, and returns nil from then on. It never skips a record.
public struct RepositoryChanges<Item>: AsyncSequence, Sendable
where Item: Codable & Identifiable & Equatable & Sendable, Item.ID: Codable & Sendable {
    public typealias Element = RepositoryChange<Item>

    let records: AsyncStream<RecordChanges>
    let collection: String
    let coding: RecordCoding.Implementation
    let strategies: RecordCoding.Strategies
    let store: RecordStore
    let migrator: ItemMigrator

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(
            base: records.makeAsyncIterator(), collection: collection, decoder: PayloadCoder(coding, strategies: strategies),
            store: store, migrator: migrator)
    }

    /// Reads the store's changes and decodes them, one transaction at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<RecordChanges>.AsyncIterator
        let collection: String
        let decoder: PayloadCoder
        let store: RecordStore
        let migrator: ItemMigrator
        var isFinished = false

        public mutating func next() async throws -> RepositoryChange<Item>? {
            guard !isFinished, let change = await base.next() else {
                isFinished = true
                return nil
            }
            do {
                let upserts = try await readableUpserts(of: change)
                return try RecordRepository<Item>.decode(change, upserts: upserts, collection: collection, decoder: decoder)
            } catch {
                isFinished = true
                throw error
            }
        }

        /// The upserts of `change` as this version reads them, checked as a load checks them:
        /// a collection or a record a newer app wrote, and a collection recorded with other
        /// payload strategies, throw (never decoded as this version's items). The changed
        /// records are read again with the versions, in one read transaction, so what is
        /// decoded is what was checked (another stream or a load may have migrated them since
        /// the change was delivered); a record removed meanwhile is left out (a later element
        /// removes it). When the collection holds older items (a record pulled from a device
        /// running an older app), it is migrated first, and the records are read as the
        /// migration left them.
        private func readableUpserts(of change: RecordChanges) async throws -> [String: Data] {
            guard !change.upserts.isEmpty else { return [:] }
            let migrator = migrator
            let collection = collection
            let current = migrator.currentVersion
            let keys = Array(change.upserts.keys)
            let (state, read) = try await store.readWithItemVersion(collection, operation: .read, inline: true) {
                engine, name, _ in
                let records = try engine.itemVersions.recordItemVersions(name, above: current)
                var upserts: [String: Data] = [:]
                for key in keys { upserts[key] = try engine.records.payload(name, key: key) }
                return (records, upserts)
            }
            let own = read?.0 ?? .none
            let needsMigration = try migrator.needsMigration(state, records: own)
            // The first in key order, as a load names it; usually there is none to look for.
            if !own.newer.isEmpty {
                for key in keys.sorted() {
                    if let version = own.newer[key] { throw migrator.newerRecordError(key: key, version: version) }
                }
            }
            guard needsMigration else { return read?.1 ?? [:] }
            return try await store.write(origin: .library, collection: collection) { transaction in
                try migrator.run(in: transaction)
                var upserts: [String: Data] = [:]
                for key in keys { upserts[key] = try transaction.value(collection, key: key) }
                return upserts
            }
        }
    }
}
