import Foundation

/// One Codable value stored as one record, for settings-like data: read with a default when
/// it was never saved, saved without hand-encoding.
///
/// The value is encoded by ``/RecordKeeperCoding/RecordCoding`` and stored under `key` in `collection`, beside any
/// other records there (saving it never touches them). Like ``RecordRepository``, it remembers
/// the version of the record it last loaded or saved and bases each save on it: if another
/// writer changed the value since, the save writes nothing and throws ``RecordConflict``.
/// A value never loaded is expected to be absent, so load before saving, or pass
/// ``ConflictPolicy/overwrite`` for last-writer-wins.
///
/// ```swift
/// enum Theme: String, Codable, Sendable { case system, light, dark }
/// let theme = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
/// var current = try await theme.load()      // .system until saved
/// try await theme.save(.dark)
/// ```
///
/// Operations on one `StoredValue` take effect one at a time, in the order they were called.
public actor StoredValue<Value: Codable & Sendable> {
    /// The store the record lives in.
    public nonisolated let store: RecordStore
    /// The collection holding the record.
    public nonisolated let collection: String
    /// The record's key.
    public nonisolated let key: String
    /// What ``load()`` returns while no value is stored.
    public nonisolated let defaultValue: Value

    /// The version last loaded or saved; nil: expected to be absent.
    private var version: RecordVersion?
    private var turns = OperationTurns()

    /// Creates a stored value. Does no I/O.
    public init(store: RecordStore, collection: String, key: String, default defaultValue: Value) {
        self.store = store
        self.collection = collection
        self.key = key
        self.defaultValue = defaultValue
    }

    /// The stored value, or ``defaultValue`` when none is stored (the default is not saved).
    /// Remembers the record's version (or its absence) as the base of the next save.
    /// - Throws: ``RepositoryError`` (`undecodableRecord`, naming the key) when the stored
    ///   record does not decode: never the default in its place. ``RecordStoreError``.
    public func load() async throws -> Value {
        try await loadIfPresent() ?? defaultValue
    }

    /// The stored value, or nil when none is stored. Remembers the version like ``load()``.
    /// - Throws: as ``load()``.
    public func loadIfPresent() async throws -> Value? {
        await takeTurn()
        defer { turns.release() }
        guard let record = try await store.record(collection, key: key) else {
            version = nil
            return nil
        }
        let value: Value
        do {
            value = try RecordCoding.decode(Value.self, from: record.data)
        } catch {
            throw RepositoryError(code: .undecodableRecord, collection: collection, key: key, underlying: error)
        }
        version = record.version
        return value
    }

    /// Saves `value` as the record, in one transaction. An unchanged value writes nothing.
    /// - Throws: ``RecordConflict`` (with ``ConflictPolicy/fail``) when the record changed since
    ///   it was last loaded or saved here; ``RepositoryError`` (`unencodableValue`);
    ///   ``RecordStoreError``. Nothing is written when it throws.
    public func save(_ value: Value, onConflict policy: ConflictPolicy = .fail) async throws {
        await takeTurn()
        defer { turns.release() }
        let data: Data
        do {
            data = try RecordCoding.encode(value)
        } catch {
            throw RepositoryError(code: .unencodableValue, collection: collection, key: key, underlying: error)
        }
        var changes = RecordChanges()
        changes[key] = data
        let written = try await store.applyReturningVersions(collection, changes: changes, expecting: expectation(policy))
        version = written.first?.value
    }

    /// Removes the stored value, so ``load()`` returns the default again. A value someone else
    /// removed meanwhile is no conflict: it is gone, as asked.
    /// - Throws: ``RecordConflict`` (with ``ConflictPolicy/fail``) when the record changed
    ///   since it was last loaded or saved here; ``RecordStoreError``.
    public func remove(onConflict policy: ConflictPolicy = .fail) async throws {
        await takeTurn()
        defer { turns.release() }
        // Never seen stored here: when nothing is stored, there is nothing to remove, and no
        // store or collection to create for it (as `RecordStore.delete`). One stored meanwhile
        // by someone else still conflicts below.
        if version == nil, try await store.record(collection, key: key) == nil { return }
        var changes = RecordChanges()
        changes[key] = nil
        do {
            _ = try await store.applyReturningVersions(collection, changes: changes, expecting: expectation(policy))
        } catch let conflict as RecordConflict {
            // Removed by someone else meanwhile: gone, as asked (as a repository's delete).
            guard conflict.currentVersions[key] == .some(nil) else { throw conflict }
        }
        version = nil
    }

    private func expectation(_ policy: ConflictPolicy) -> [String: RecordVersion?] {
        guard policy == .fail else { return [:] }
        let expected: [String: RecordVersion?] = [key: version]  // a nil version: must be absent
        return expected
    }

    private func takeTurn() async {
        if turns.takeIfFree() { return }
        await withCheckedContinuation { turns.enqueue($0) }
    }
}
