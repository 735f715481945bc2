/// The collections one connection has looked up (name → id and sync flag), kept from one
/// request to the next for as long as nothing can have changed them.
///
/// A single save or point read otherwise looks its collection up by name every time: on a
/// store of 100,000 records that lookup was a sixth of a save's SQLite work and a tenth of a
/// point read's. The cache is only as trusted as SQLite's own page cache: it is stamped with
/// the connection's data version (`SQLiteConnection.dataVersion`), which changes with every
/// commit of this connection and with every commit of any other connection or process that
/// this connection sees when it next begins reading.
///
/// - Inside a write transaction (`beganWrite`) the entries hold: they were stamped at the
///   version the transaction began at, or looked up inside it. A change to the collections
///   table in the transaction (a removal, a sync flag, an item version) clears them
///   (`invalidate`). A commit of that transaction stamps them with the version it produced
///   (`committed`); a rollback drops them.
/// - Outside a write transaction (a read in autocommit or in a read transaction:
///   `candidate(_:)` and `note(id:for:at:)`), an entry is used only when the version the
///   statement read at equals the stamp; the caller checks after stepping its statement, when
///   the snapshot it read is known (the version changes only when a read begins).
///
/// A class, owned by its connection and used only by whoever holds that connection: as a struct
/// property of the connection, every look-up copied it (retaining and releasing its names and
/// dictionary), a few percent of a single save.
final class CollectionRefCache {
    /// A collection's id, and its sync flag when a write looked it up (a read does not: it may
    /// read a store of a format before the flag, as it is). Trivial (no reference inside), so
    /// that looking one up copies and destroys nothing.
    private struct Entry {
        let id: Int64
        let synced: Bool?
    }

    /// A collection's recorded item version and payload coding (`collections.item_version`,
    /// `payload_coding`), as a repository's write confirmed them (see `ItemVersionsTable`).
    struct RecordedItemVersion: Equatable {
        let version: Int
        let coding: String?
    }

    /// The first collection noted (most stores write and read one or a few): compared before
    /// any hashing, and kept out of the dictionary, whose storage type a cold open's first read
    /// would otherwise build at run time.
    private var first: (name: String, entry: Entry)?
    /// Every other collection noted.
    private var others: [String: Entry] = Dictionary()
    /// The data version at which every entry holds; nil while none is known to hold outside
    /// the running write transaction.
    private var stamp: UInt32?
    /// A write transaction that began through `beganWrite` is open: entries hold for it.
    private var inWrite = false
    /// The item version and payload coding a repository's write found recorded for a
    /// collection, while its entry is the one noted with them (`insert` and `removeAll` drop
    /// them).
    private var confirmed: [String: RecordedItemVersion] = Dictionary()

    /// The upper bound on entries: a store with more collections than this in use looks the
    /// others up each time.
    static let capacity = 64

    /// At the start of a write transaction that began at `version`: keeps the entries only
    /// when nothing has changed the store since they were stamped.
    func beganWrite(at version: UInt32?) {
        if version == nil || version != stamp { removeAll() }
        stamp = nil
        inWrite = true
    }

    /// The collection as this write transaction knows it; nil outside one.
    func refInWrite(_ name: String) -> CollectionRef? {
        guard inWrite, let entry = entry(name), let synced = entry.synced else { return nil }
        return CollectionRef(id: entry.id, synced: synced)
    }

    /// The collection as this write transaction knows it, when its recorded item version and
    /// payload coding are known to be `recorded`; nil outside a write transaction or when they
    /// are not known (then the caller reads them).
    func refInWrite(_ name: String, recorded: RecordedItemVersion) -> CollectionRef? {
        guard !confirmed.isEmpty, confirmed[name] == recorded else { return nil }
        return refInWrite(name)
    }

    /// Notes a collection looked up or created inside the running write transaction. What a
    /// write confirmed of its item version stays with it while the id and flag are the same:
    /// only `ItemVersionsTable.setItemVersion` changes them, and it clears every entry.
    func noteInWrite(_ ref: CollectionRef, for name: String) {
        guard inWrite else { return }
        if let entry = entry(name), entry.id == ref.id, entry.synced == ref.synced { return }
        insert(Entry(id: ref.id, synced: ref.synced), for: name)
    }

    /// Notes a collection whose recorded item version and payload coding this write
    /// transaction read as `recorded`.
    func noteInWrite(_ ref: CollectionRef, for name: String, recorded: RecordedItemVersion) {
        guard inWrite else { return }
        noteInWrite(ref, for: name)
        confirmed[name] = recorded
    }

    /// The collections table changed in the running transaction: nothing noted so far holds.
    func invalidate() {
        removeAll()
        stamp = nil
    }

    /// The running transaction committed, giving the store `version`: what it noted holds at
    /// that version. After a read transaction, nothing changes.
    func committed(at version: UInt32?) {
        guard inWrite else { return }
        inWrite = false
        stamp = version
        if version == nil { removeAll() }
    }

    /// The running transaction rolled back (or its commit failed): nothing noted holds.
    func rolledBack() {
        inWrite = false
        invalidate()
    }

    /// The collection as noted, for a read: inside a write transaction it holds
    /// (`atVersion` nil); otherwise only if the data version the read then sees is `atVersion`,
    /// which the caller checks after stepping its statement. Nil when nothing is noted.
    func candidate(_ name: String) -> (id: Int64, atVersion: UInt32?)? {
        if inWrite { return entry(name).map { ($0.id, nil) } }
        guard let stamp, let entry = entry(name) else { return nil }
        return (entry.id, stamp)
    }

    private func entry(_ name: String) -> Entry? {
        if let first, first.name == name { return first.entry }
        return others.isEmpty ? nil : others[name]
    }

    /// Notes a collection a read found at `version`, the data version its statement read at
    /// (dropping what was noted at another version); inside a write transaction, as
    /// `noteInWrite`.
    func note(id: Int64, for name: String, at version: UInt32?) {
        if inWrite {
            // Keeps a flag a write of this transaction looked up.
            if entry(name)?.id != id { insert(Entry(id: id, synced: nil), for: name) }
            return
        }
        guard let version else { return }
        if version != stamp {
            removeAll()
            stamp = version
        }
        if entry(name)?.id != id { insert(Entry(id: id, synced: nil), for: name) }
    }

    private func insert(_ entry: Entry, for name: String) {
        if !confirmed.isEmpty { confirmed[name] = nil }
        if first == nil || first?.name == name {
            first = (name, entry)
            return
        }
        if others.count + 1 >= Self.capacity, others[name] == nil {
            // The evicted entries take what was confirmed with them.
            for evicted in others.keys { confirmed[evicted] = nil }
            others.removeAll(keepingCapacity: true)
        }
        others[name] = entry
    }

    private func removeAll() {
        first = nil
        if !others.isEmpty { others.removeAll(keepingCapacity: true) }
        if !confirmed.isEmpty { confirmed.removeAll(keepingCapacity: true) }
    }
}
