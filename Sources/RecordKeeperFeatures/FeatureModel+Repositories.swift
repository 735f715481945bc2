public import RecordKeeper

extension FeatureModel {
    /// A model whose content is every item of `repository` (``RecordRepository/load()``).
    ///
    /// ```swift
    /// let model = FeatureModel(repository: books)   // FeatureModel<[Book]>
    /// await model.refresh()
    /// ```
    ///
    /// ``refresh()`` (and the refresh after ``perform(_:_:)``) loads as
    /// ``RecordRepository/load()`` does: the versions loaded become the base of later saves.
    /// A refresh the model makes by itself while following the repository (content not loaded
    /// yet or shown beside an error, a change it cannot apply, a stream that failed) teaches
    /// only the versions of items the repository knows none of, as applying a change does not
    /// teach any: a save based on an older copy still conflicts with another writer's change.
    public convenience init<Item>(repository: RecordRepository<Item>) where Value == [Item] {
        self.init(
            load: { try await repository.load() },
            loadForChange: { try await repository.load(remembering: .unknownOnly) })
        contentSource = ObjectIdentifier(repository)
    }

    /// A model whose content is the items of `repository` that a query selects
    /// (``RecordRepository/query(where:orderBy:limit:after:)``): a screen's live list, such
    /// as "the 20 words due for review". Answered by SQLite, through the collection's declared
    /// indexes, decoding only the items shown.
    ///
    /// ```swift
    /// let due = FeatureModel(repository: words, where: Word.dueAt <= .now, orderBy: [Word.dueAt.ascending], limit: 20)
    /// await due.follow(words)   // runs the query again after each commit to the collection
    /// await due.refresh()
    /// ```
    /// Following its repository (`follow(repository)`) runs the query again
    /// after each commit to the collection, by any writer; a failed run shows beside the last
    /// confirmed list.
    ///
    /// ``refresh()`` (and the refresh after ``perform(_:_:)``) reads as
    /// ``RecordRepository/query(where:orderBy:limit:after:)`` does: the versions of the items
    /// shown become the base of later saves. A run for a followed change, like
    /// ``RecordRepository/observe(where:orderBy:limit:)``, teaches only the versions of items the
    /// repository knows none of: a save based on what the model showed before another writer's
    /// change still conflicts with it.
    public convenience init<Item>(
        repository: RecordRepository<Item>, where predicate: ItemPredicate<Item>?,
        orderBy order: [ItemOrder<Item>] = [], limit: Int? = nil
    ) where Value == [Item], Item: Queryable {
        self.init(
            load: { try await repository.query(where: predicate, orderBy: order, limit: limit).elements },
            loadForChange: {
                try await repository.query(
                    where: predicate, orderBy: order, limit: limit, after: nil, remembering: .unknownOnly
                ).elements
            })
    }

    /// Keeps the model current with every change committed to `repository`'s collection
    /// through its store (``RecordRepository/changes()``), until the model is released or
    /// ``stopFollowing()``.
    ///
    /// The store reports every commit to the collection: made through it (by any repository on
    /// it, or by the store itself), through another `RecordStore` on the same file, or by
    /// another process (the `recordkeeper` tool, an app extension), the latter within a few
    /// milliseconds (see RecordKeeper's Observation article).
    ///
    /// - A model made with ``init(repository:)`` for this repository applies each change to its
    ///   content (``RepositoryChange/applied(to:)``: the changed items only, in key order), so a
    ///   commit costs the keys it changed, not a load of the whole collection. The
    ///   repository's versions are not touched: a save or delete based on what the model loaded
    ///   still conflicts with another writer's change the model has shown (load again, through
    ///   ``refresh()`` or the repository, to base writes on it). Content not loaded yet, or
    ///   shown beside a refresh error, is refreshed instead. A stream that fell behind the
    ///   change log yields the whole collection as a full state
    ///   (``RepositoryChange/isFullState``), naming no removal: it replaces the content, so
    ///   items removed meanwhile go.
    /// - Any other model refreshes (runs its loading function) after each commit.
    ///
    /// Following starts before this returns: a change committed after it is seen. When the
    /// stream ends with an error (a changed record that does not decode), the model refreshes,
    /// which shows the error in ``state``, and follows a new stream from then on.
    public func follow<Item>(_ repository: RecordRepository<Item>) async {
        let first = await repository.changes()
        let changes = RepositoryFollowing(repository: repository, first: first)
        guard contentSource == ObjectIdentifier(repository), let list = self as? FeatureModel<[Item]> else {
            follow(changes)
            return
        }
        list.follow(changes) { model, change in
            guard let change else {
                await model.refreshForChange()  // the stream failed: show the error
                return
            }
            await model.applyForChange { try change.applied(to: $0) }
        }
    }
}

/// The changes of a repository as one sequence that survives decoding errors: after the
/// repository's stream throws, it yields nil once (so the model refreshes and shows the error)
/// and goes on with a new stream.
struct RepositoryFollowing<Item>: AsyncSequence, Sendable
where Item: Codable & Identifiable & Equatable & Sendable, Item.ID: Codable & Sendable {
    typealias Element = RepositoryChange<Item>?
    let repository: RecordRepository<Item>
    let first: RepositoryChanges<Item>

    func makeAsyncIterator() -> Iterator {
        Iterator(repository: repository, current: first.makeAsyncIterator())
    }

    struct Iterator: AsyncIteratorProtocol {
        let repository: RecordRepository<Item>
        var current: RepositoryChanges<Item>.AsyncIterator

        mutating func next() async -> RepositoryChange<Item>?? {
            do {
                guard let change = try await current.next() else { return nil }
                return .some(change)
            } catch {
                // The model's refresh reads the collection again and shows this failure
                // (or the state after it); the error itself is not dropped silently.
                if Task.isCancelled { return nil }
                current = await repository.changes().makeAsyncIterator()
                return .some(nil)
            }
        }
    }
}
