import Foundation

/// The change log (format 3, docs/FORMAT.md): one row `(seq, collection, key)` per record a
/// committed transaction inserted, changed or removed, written in that same transaction.
///
/// Change streams read it, from any connection and any process, to learn what changed after
/// the position they last delivered; the payload they deliver is the record's payload when
/// they read it (absent: a removal), so the log need not repeat payloads and several changes
/// to one key coalesce to the latest.
///
/// Writes log only while some stream of any process observes the file (`ObserverLock`: a
/// shared `flock` on `<store>-observers` that observers hold, and writers try to take
/// exclusively); a store whose observation is suspended resyncs instead (`ChangeWatcher`). The
/// log is kept lean for the writes that do log: a row holds two short strings in a rowid
/// table, so it appends at the right edge of one B-tree through one cached statement, and rows
/// past ``retainedEntries`` are trimmed.
enum ChangeLog {
    /// How many of the newest entries the log keeps. A stream that falls further behind than
    /// that (its next entry was trimmed) gets a complete resync instead (see `ChangeWatcher`).
    static let retainedEntries: Int64 = 100_000
    /// A write transaction trims the log when the seqs it wrote cross a multiple of this, so the
    /// trimming statement runs about once per this many logged changes.
    static let trimInterval: Int64 = 8_192

    /// The seq up to which a transaction that logged `first...last` should trim, or nil.
    static func trimBound(first: Int64, last: Int64) -> Int64? {
        guard (first - 1) / trimInterval != last / trimInterval else { return nil }
        let bound = last - retainedEntries
        return bound > 0 ? bound : nil
    }
}

/// The gateway of the change log (`change_log`, see ``ChangeLog``), on the connection of one
/// request: the writer appends and trims it inside a write transaction; change streams read it.
struct ChangeLogTable {
    let runner: StatementRunner

    private var connection: SQLiteConnection { runner.connection }

    // MARK: Writing (inside the write transaction)

    /// Appends one entry; returns its seq.
    func append(_ collection: String, key: String) throws -> Int64 {
        try runner.execute(
            "INSERT INTO change_log (collection, key) VALUES (?1, ?2)", collection, key, collection: collection, key: key)
        return connection.lastInsertRowID
    }

    /// Removes the entries up to `seq`. Never removes the newest entry, so a seq is never
    /// given out twice (a rowid table reuses only the largest rowid).
    func trim(through seq: Int64) throws {
        try runner.execute("DELETE FROM change_log WHERE seq <= ?1", seq)
    }

    // MARK: Reading (change streams)

    /// The oldest and newest seq in the log; (nil, 0) when it is empty.
    func bounds() throws -> (first: Int64?, last: Int64) {
        try runner.one("SELECT min(seq), max(seq) FROM change_log") { statement -> (first: Int64?, last: Int64)? in
            guard !statement.isNull(at: 1) else { return nil }
            return (statement.int64(at: 0), statement.int64(at: 1))
        } ?? (nil, 0)
    }

    /// The keys of `collection` logged after `seq`, in log order without repeats, from at most
    /// `limit` entries, and the seq of the last entry read (nil when there was none).
    func loggedKeys(_ collection: String, after seq: Int64, limit: Int) throws -> (keys: [String], last: Int64?, full: Bool) {
        var keys: [String] = []
        var seen = Set<String>()
        var last: Int64?
        var count = 0
        try runner.each(
            "SELECT seq, key FROM change_log WHERE seq > ?1 AND collection = ?2 ORDER BY seq LIMIT ?3",
            seq, collection, limit, collection: collection
        ) { statement in
            count += 1
            last = statement.int64(at: 0)
            let key = try runner.key(statement, at: 1, collection: collection)
            if seen.insert(key).inserted { keys.append(key) }
        }
        return (keys, last, count == limit)
    }

    /// Whether the store's format has the change log (format 3 on): reads of older stores do
    /// not migrate, so a stream may read a store of format 1 or 2 until its first write.
    func exists() throws -> Bool {
        try runner.run { try connection.userVersion() >= 3 }
    }

    /// The `PRAGMA data_version` of the connection: it changes when another connection commits.
    func dataVersion() throws -> Int64 {
        try runner.one("PRAGMA data_version") { $0.int64(at: 0) } ?? 0
    }
}
