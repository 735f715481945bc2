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

extension RecordEngine {
    // MARK: Writing (inside the write transaction)

    /// Appends one entry; returns its seq.
    func logChange(_ collection: String, key: String) throws -> Int64 {
        try run(collection: collection, key: key) {
            try connection.withStatement("INSERT INTO change_log (collection, key) VALUES (?1, ?2)") { statement in
                try statement.bind(collection, at: 1)
                try statement.bind(key, at: 2)
                try statement.run()
            }
            return connection.lastInsertRowID
        }
    }

    /// Removes the entries up to `seq`. Never removes the newest entry, so a seq is never
    /// given out twice (a rowid table reuses only the largest rowid).
    func trimChangeLog(through seq: Int64) throws {
        try run {
            try connection.withStatement("DELETE FROM change_log WHERE seq <= ?1") { statement in
                try statement.bind(seq, at: 1)
                try statement.run()
            }
        }
    }

    // MARK: Reading (change streams)

    /// The oldest and newest seq in the log; (nil, 0) when it is empty.
    func changeLogBounds() throws -> (first: Int64?, last: Int64) {
        try run {
            try connection.withStatement("SELECT min(seq), max(seq) FROM change_log") { statement in
                guard try statement.step(), !statement.isNull(at: 1) else { return (nil, 0) }
                return (statement.int64(at: 0), statement.int64(at: 1))
            }
        }
    }

    /// The keys of `collection` logged after `seq`, in log order without repeats, from at most
    /// `limit` entries, and the seq of the last entry read (nil when there was none).
    func loggedKeys(_ collection: String, after seq: Int64, limit: Int) throws -> (keys: [String], last: Int64?, full: Bool) {
        try run(collection: collection) {
            try connection.withStatement(
                "SELECT seq, key FROM change_log WHERE seq > ?1 AND collection = ?2 ORDER BY seq LIMIT ?3"
            ) { statement in
                try statement.bind(seq, at: 1)
                try statement.bind(collection, at: 2)
                try statement.bind(Int64(limit), at: 3)
                var keys: [String] = []
                var seen = Set<String>()
                var last: Int64?
                var count = 0
                while try statement.step() {
                    count += 1
                    last = statement.int64(at: 0)
                    let key = statement.string(at: 1)
                    if seen.insert(key).inserted { keys.append(key) }
                }
                return (keys, last, count == limit)
            }
        }
    }

    /// Whether the store's format has the change log (format 3 on): reads of older stores do
    /// not migrate, so a stream may read a store of format 1 or 2 until its first write.
    func hasChangeLog() throws -> Bool {
        try run { try connection.userVersion() >= 3 }
    }

    /// The `PRAGMA data_version` of the connection: it changes when another connection commits.
    func dataVersion() throws -> Int64 {
        try run {
            try connection.withStatement("PRAGMA data_version") { statement in
                try statement.step() ? statement.int64(at: 0) : 0
            }
        }
    }
}
