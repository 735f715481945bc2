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
    /// to see the state, and call `changes()` again to keep listening.
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
        RepositoryChanges(records: await store.changes(in: collection), collection: collection, coding: coding)
    }

    /// Decodes one record-level change; the first failure throws.
    static func decode(_ change: RecordChanges, collection: String, decoder: PayloadCoder) throws -> RepositoryChange<Item> {
        let byKey: (String, String) -> Bool = { $0 < $1 }  // code-point order = UTF-8 byte order
        var result = RepositoryChange<Item>(isFullState: change.isFullState)
        for key in change.upserts.keys.sorted(by: byKey) {
            guard let data = change.upserts[key] else { continue }
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
    let coding: RecordCoding.Engine

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: records.makeAsyncIterator(), collection: collection, decoder: PayloadCoder(coding))
    }

    /// Reads the store's changes and decodes them, one transaction at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<RecordChanges>.AsyncIterator
        let collection: String
        let decoder: PayloadCoder
        var isFinished = false

        public mutating func next() async throws -> RepositoryChange<Item>? {
            guard !isFinished, let change = await base.next() else {
                isFinished = true
                return nil
            }
            do {
                return try RecordRepository<Item>.decode(change, collection: collection, decoder: decoder)
            } catch {
                isFinished = true
                throw error
            }
        }
    }
}
