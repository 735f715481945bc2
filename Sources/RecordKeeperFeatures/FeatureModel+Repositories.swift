public import RecordKeeper

extension FeatureModel {
    /// A model whose content is every item of `repository` (``RecordRepository/load()``).
    ///
    /// ```swift
    /// let model = FeatureModel(repository: books)   // FeatureModel<[Book]>
    /// await model.refresh()
    /// ```
    public convenience init<Item>(repository: RecordRepository<Item>) where Value == [Item] {
        self.init(load: { try await repository.load() })
    }

    /// Refreshes after every change committed to `repository`'s collection through its store
    /// (``RecordRepository/changes()``), until the model is released or ``stopFollowing()``.
    ///
    /// The store reports every commit to the collection: made through it (by any repository on
    /// it, or by the store itself), through another `RecordStore` on the same file, or by
    /// another process (the `recordkeeper` tool, an app extension), the latter within a few
    /// milliseconds (see RecordKeeper's Observation article).
    ///
    /// A stream that fell behind the change log yields the whole collection as a full state
    /// (``RepositoryChange/isFullState``), naming no removal: the model replaces its content
    /// then (today every change refreshes, which replaces), so items removed meanwhile go.
    ///
    /// Following starts before this returns: a change committed after it is seen. When the
    /// stream ends with an error (a changed record that does not decode), the model refreshes,
    /// which shows the error in ``state``, and follows a new stream from then on.
    public func follow<Item>(_ repository: RecordRepository<Item>) async {
        let first = await repository.changes()
        follow(RepositoryFollowing(repository: repository, first: first))
    }
}

/// The changes of a repository as one sequence that survives decoding errors: after the
/// repository's stream throws, it yields once (so the model refreshes and shows the error)
/// and goes on with a new stream.
struct RepositoryFollowing<Item>: AsyncSequence, Sendable
where Item: Codable & Identifiable & Equatable & Sendable, Item.ID: Codable & Sendable {
    typealias Element = Void
    let repository: RecordRepository<Item>
    let first: RepositoryChanges<Item>

    func makeAsyncIterator() -> Iterator {
        Iterator(repository: repository, current: first.makeAsyncIterator())
    }

    struct Iterator: AsyncIteratorProtocol {
        let repository: RecordRepository<Item>
        var current: RepositoryChanges<Item>.AsyncIterator

        mutating func next() async -> Void? {
            do {
                guard try await current.next() != nil else { return nil }
                return ()
            } catch {
                // The model's refresh reads the collection again and shows this failure
                // (or the state after it); the error itself is not dropped silently.
                if Task.isCancelled { return nil }
                current = await repository.changes().makeAsyncIterator()
                return ()
            }
        }
    }
}
