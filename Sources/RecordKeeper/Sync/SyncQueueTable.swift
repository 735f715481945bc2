import Foundation

/// A pending local change as a push sends it: the record's captured value, the server version
/// the device's value is based on, and its collection's policy.
struct PendingSyncChange: Sendable {
    let collection: String
    let key: String
    let value: SyncValue
    let base: SyncServerVersion?
    let policy: SyncConflictPolicy
    /// The item version the value was captured at (format 8; nil: byte-level data).
    let itemVersion: Int?
}

/// A pending local operation (format 5, `sync_operations`), with its changes.
struct PendingSyncOperation: Sendable {
    let sequence: Int64
    let id: UUID
    var changes: [PendingSyncChange]
}

/// The gateway of sync's queue of pending local operations (format 5, docs/FORMAT.md:
/// `sync_operations`, `sync_operation_changes`), on the connection of one request: capturing
/// a transaction's changes as one operation, reading them for a push, and settling them when
/// the server answers (acknowledged changes set the records' server versions).
/// Names are already validated.
struct SyncQueueTable {
    let runner: StatementRunner

    // MARK: Capture

    /// Writes one operation whose changes are `records`' current values (absent: tombstone),
    /// or several in a row when they would be more than `pushBytes` in a push (see
    /// ``splitCaptured(_:pushBytes:)``). Returns the first one's sequence.
    @discardableResult
    func capture(_ records: [SyncRecordKey], pushBytes: Int = RecordSync.capturedPushBytes) throws -> Int64 {
        // A key the server cannot store would be refused with the whole push, again at every
        // push, blocking every later operation: the local write is refused instead.
        for record in records where record.key.utf8.contains(0) {
            throw keyWithNUL(record.key, collection: record.collection)
        }
        let sequence = try newSyncOperation()
        for record in records {
            // The value at commit, with the item version its collection records (nil: no
            // repository with item versions wrote it; also for a removed collection).
            try runner.execute(
                """
                INSERT INTO sync_operation_changes (sequence, collection, key, payload, item_version)
                SELECT ?1, ?2, ?3, (SELECT r.payload FROM records r WHERE r.collection_id = c.id AND r.key = ?3),
                       c.item_version
                FROM (SELECT 1) LEFT JOIN collections c ON c.name = ?2
                """, sequence, record.collection, record.key, collection: record.collection, key: record.key)
        }
        // A local write makes the record's value the collection's shape: an item version a
        // pulled value had (kept per record) no longer applies. Only records that have one
        // are touched (the partial index), usually none.
        try runner.execute(
            """
            UPDATE sync_records SET item_version = NULL
            WHERE item_version IS NOT NULL
            AND (collection, key) IN (SELECT collection, key FROM sync_operation_changes WHERE sequence = ?1)
            """, sequence)
        if records.count > 1 { try splitCaptured(sequence, pushBytes: pushBytes) }
        return sequence
    }

    /// About how many bytes a change takes in a push's JSON: its payload in base64, its key
    /// (twice: escaped text is rarely longer), its collection and the fields around them.
    private static let changeOverheadBytes = 160

    /// Moves the changes of operation `sequence`, in (collection, key) order, into operations
    /// of about `pushBytes` each in a push (the first stays `sequence`, the others take the
    /// next sequences), when they are more than that in all: an operation applies whole on the
    /// server, so a push cannot split one, and one larger than a relay's body limit (8 MiB
    /// unless its operator chose otherwise) could never be pushed, blocking every later one. A
    /// local transaction that large thus reaches the server in parts, each whole or not at all.
    /// One statement sums the operation's sizes (`length` of a blob reads its size only); a
    /// split reads them per change, then moves each later part with one statement.
    private func splitCaptured(_ sequence: Int64, pushBytes: Int) throws {
        let total = try runner.one(
            """
            SELECT total(coalesce(length(payload), 0) * 4 / 3 + 2 * length(key) + length(collection) + ?2)
            FROM sync_operation_changes WHERE sequence = ?1
            """, sequence, Int64(Self.changeOverheadBytes)
        ) { $0.double(at: 0) } ?? 0
        guard total > Double(pushBytes) else { return }
        // The first change of each part after the first, in (collection, key) order.
        var starts: [SyncRecordKey] = []
        var size = 0
        try runner.each(
            """
            SELECT collection, key, coalesce(length(payload), 0) * 4 / 3 + 2 * length(key) + length(collection) + ?2
            FROM sync_operation_changes WHERE sequence = ?1 ORDER BY collection, key
            """, sequence, Int64(Self.changeOverheadBytes)
        ) { row in
            let bytes = Int(row.int64(at: 2))
            if size > 0, size + bytes > pushBytes {
                starts.append(SyncRecordKey(collection: row.string(at: 0), key: row.string(at: 1)))
                size = 0
            }
            size += bytes
        }
        // From the last part back, so each statement moves exactly the changes from its start on
        // that are still in the first operation.
        var parts: [(start: SyncRecordKey, sequence: Int64)] = []
        for start in starts { parts.append((start, try newSyncOperation())) }
        for part in parts.reversed() {
            try runner.execute(
                """
                UPDATE sync_operation_changes SET sequence = ?2
                WHERE sequence = ?1 AND (collection, key) >= (?3, ?4)
                """, sequence, part.sequence, part.start.collection, part.start.key,
                collection: part.start.collection, key: part.start.key)
        }
    }

    /// The error for a key the sync server cannot store: refused locally, or it would be refused
    /// with the whole push, again at every push, blocking every later operation.
    private func keyWithNUL(_ key: String, collection: String) -> RecordStoreError {
        RecordStoreError(
            code: .invalidKey, operation: runner.operation, collection: collection, key: key, path: runner.path,
            detail: "a record of a synced collection cannot have a key containing a NUL character "
                + "(the sync server cannot store it); nothing was written")
    }

    /// A new, empty operation with a fresh id and the next sequence (never given out before:
    /// AUTOINCREMENT).
    ///
    /// The sequence is the row's rowid (`INTEGER PRIMARY KEY`), so SQLite's last insert rowid
    /// gives it: no `RETURNING`, which runs through an ephemeral table of its own.
    private func newSyncOperation() throws -> Int64 {
        guard try runner.execute(
            "INSERT INTO sync_operations (id, created_at) VALUES (?1, ?2)",
            UUID().uuidString, Int64(Date().timeIntervalSince1970 * 1000))
        else { throw runner.malformed("creating a sync operation inserted no row") }
        return runner.connection.lastInsertRowID
    }

    /// Captures every record of collection `id` (`name`) as operations of at most `chunk`
    /// changes and about `bytes` bytes of keys and payloads each (the initial upload when sync
    /// starts for a collection), in key order; a record larger than `bytes` is an operation of
    /// its own. Returns how many operations it wrote.
    ///
    /// The byte budget keeps each operation well under a relay's body limit (8 MiB unless its
    /// operator chose otherwise): an operation's changes apply together, so a push cannot
    /// split one, and an initial upload of a thousand large records in one operation could
    /// never be pushed through the relay. Each operation is one look-up of the next keys and
    /// payload sizes (`length` of a blob reads its size only), then one `INSERT … SELECT` of the
    /// records up to the last key that fits.
    @discardableResult
    func captureExistingRecords(_ id: Int64, collection name: String, chunk: Int, bytes: Int) throws -> Int {
        var last: String?
        var operations = 0
        while let cut = try uploadCut(id, collection: name, after: last, chunk: chunk, bytes: bytes) {
            let sequence = try newSyncOperation()
            try runner.run(collection: name) {
                try runner.connection.withStatement(
                    last == nil
                        ? """
                        INSERT INTO sync_operation_changes (sequence, collection, key, payload, item_version)
                        SELECT ?1, ?2, key, payload, (SELECT item_version FROM collections WHERE id = ?3)
                        FROM records WHERE collection_id = ?3 AND key <= ?5
                        """
                        : """
                        INSERT INTO sync_operation_changes (sequence, collection, key, payload, item_version)
                        SELECT ?1, ?2, key, payload, (SELECT item_version FROM collections WHERE id = ?3)
                        FROM records WHERE collection_id = ?3 AND key > ?4 AND key <= ?5
                        """
                ) { statement in
                    // ?4 only in the second form: not the runner's binding of ?1, ?2, … in order.
                    try statement.bind(sequence, at: 1)
                    try statement.bind(name, at: 2)
                    try statement.bind(id, at: 3)
                    if let last { try statement.bind(last, at: 4) }
                    try statement.bind(cut, at: 5)
                    try statement.run()
                }
            }
            // The look-up found a record up to `cut`, so the insert took at least one: a key
            // the look-up and the insert read differently (bytes that are not UTF-8, written by
            // another tool) would otherwise never move `last` on.
            guard runner.connection.changes > 0 else {
                throw RecordStoreError(
                    code: .malformedRecord, operation: runner.operation, collection: name, key: cut, path: runner.path,
                    detail: "a key of the collection is not valid UTF-8, so its records cannot be uploaded; nothing was written")
            }
            operations += 1
            last = cut
        }
        return operations
    }

    /// The last key of the next operation of an initial upload: after `after` (from the first
    /// key when nil), at most `chunk` records and, past the first, at most `bytes` bytes of
    /// keys and payloads. Nil when no record is left.
    private func uploadCut(_ id: Int64, collection name: String, after: String?, chunk: Int, bytes: Int) throws -> String? {
        try runner.run(collection: name) {
            try runner.connection.withStatement(
                after == nil
                    ? "SELECT key, length(payload) FROM records WHERE collection_id = ?1 ORDER BY key LIMIT ?3"
                    : """
                    SELECT key, length(payload) FROM records WHERE collection_id = ?1 AND key > ?2
                    ORDER BY key LIMIT ?3
                    """
            ) { statement in
                try statement.bind(id, at: 1)
                if let after { try statement.bind(after, at: 2) }
                try statement.bind(Int64(chunk), at: 3)
                var cut: String?
                var total = 0
                while try statement.step() {
                    // Never uploaded as another key: a damaged key stops the capture.
                    let key = try runner.key(statement, at: 0, collection: name)
                    if key.utf8.contains(0) { throw keyWithNUL(key, collection: name) }
                    total += key.utf8.count + Int(statement.int64(at: 1))
                    if cut != nil, total > bytes { break }
                    cut = key
                }
                return cut
            }
        }
    }

    /// Gives every pending operation a new id (a new device id was taken); returns how many.
    func reissueOperationIDs() throws -> Int {
        let sequences = try runner.all("SELECT sequence FROM sync_operations ORDER BY sequence") { $0.int64(at: 0) }
        for sequence in sequences {
            try runner.execute("UPDATE sync_operations SET id = ?2 WHERE sequence = ?1", sequence, UUID().uuidString)
        }
        return sequences.count
    }

    // MARK: Pending operations

    /// Up to `limit` pending operations after `sequence`, in order, without their changes.
    func operations(after sequence: Int64, limit: Int) throws -> [(sequence: Int64, id: UUID)] {
        try runner.all(
            "SELECT sequence, id FROM sync_operations WHERE sequence > ?1 ORDER BY sequence LIMIT ?2", sequence, limit
        ) { statement in
            let text = statement.string(at: 1)
            guard let id = UUID(uuidString: text) else {
                throw runner.malformed("sync operation \(statement.int64(at: 0)) has a malformed id '\(text)'")
            }
            return (statement.int64(at: 0), id)
        }
    }

    /// The changes of one pending operation (at most `limit` of them), each with its base (the
    /// record's server version now) and its collection's policy.
    func changes(_ sequence: Int64, limit: Int = Int.max) throws -> [PendingSyncChange] {
        try runner.all(
            """
            SELECT c.collection, c.key, c.payload, s.server_version, p.policy, c.item_version
            FROM sync_operation_changes c
            LEFT JOIN sync_records s ON s.collection = c.collection AND s.key = c.key
            LEFT JOIN sync_collections p ON p.name = c.collection
            WHERE c.sequence = ?1
            LIMIT ?2
            """, sequence, limit
        ) { statement in
            let collection = statement.string(at: 0)
            let key = try runner.key(statement, at: 1, collection: collection)
            var policy = SyncConflictPolicy.report
            if !statement.isNull(at: 4) {
                let stored = statement.string(at: 4)
                guard let known = SyncConflictPolicy(rawValue: stored) else {
                    throw runner.malformed(
                        collection: collection, key: key, "unknown sync policy '\(stored)' in sync_collections")
                }
                policy = known
            }
            return PendingSyncChange(
                collection: collection, key: key,
                value: statement.isNull(at: 2) ? .tombstone : .payload(statement.data(at: 2)),
                base: statement.isNull(at: 3) ? nil : SyncServerVersion(statement.int64(at: 3)),
                policy: policy,
                itemVersion: statement.isNull(at: 5) ? nil : Int(statement.int64(at: 5)))
        }
    }

    /// The records of operation `sequence` that no other pending operation changes and whose
    /// server value kept aside is newer than `version` (that value wins when the operation is
    /// acknowledged with `version`). Usually none.
    func newerAsides(of sequence: Int64, than version: Int64) throws -> [SyncAside] {
        try runner.all(
            """
            SELECT c.collection, c.key, s.aside_payload, s.aside_deleted, s.aside_version, s.aside_item_version
            FROM sync_operation_changes c
            JOIN sync_records s ON s.collection = c.collection AND s.key = c.key
            WHERE c.sequence = ?1 AND s.aside_version > ?2
            AND NOT EXISTS (SELECT 1 FROM sync_operation_changes o
                            WHERE o.collection = c.collection AND o.key = c.key AND o.sequence != ?1)
            """, sequence, version
        ) { statement in
            SyncAside(
                record: SyncRecordKey(collection: statement.string(at: 0), key: statement.string(at: 1)),
                statement, from: 2)
        }
    }

    /// Sets, in two statements, the server version of every record operation `sequence`
    /// changes to `version` (the server applied the operation with it): a record that another
    /// pending operation also changes keeps its value aside; any other forgets it, except the
    /// records whose value aside is newer than `version` (see ``newerAsides(of:than:)``), which
    /// are left alone.
    func acknowledgeChanges(of sequence: Int64, version: Int64) throws {
        try runner.execute(
            """
            INSERT INTO sync_records (collection, key, server_version)
            SELECT c.collection, c.key, ?2 FROM sync_operation_changes c
            WHERE c.sequence = ?1
            AND EXISTS (SELECT 1 FROM sync_operation_changes o
                        WHERE o.collection = c.collection AND o.key = c.key AND o.sequence != ?1)
            ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version
            """, sequence, version)
        try runner.execute(
            """
            INSERT INTO sync_records (collection, key, server_version)
            SELECT c.collection, c.key, ?2 FROM sync_operation_changes c
            WHERE c.sequence = ?1
            AND NOT EXISTS (SELECT 1 FROM sync_operation_changes o
                            WHERE o.collection = c.collection AND o.key = c.key AND o.sequence != ?1)
            AND NOT EXISTS (SELECT 1 FROM sync_records s
                            WHERE s.collection = c.collection AND s.key = c.key AND s.aside_version > ?2)
            ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version,
                aside_payload = NULL, aside_deleted = 0, aside_version = NULL, aside_item_version = NULL
            """, sequence, version)
    }

    /// The records an operation still changes (conflicts of earlier operations may have
    /// dropped some); empty when the operation is no longer pending.
    func records(_ sequence: Int64) throws -> [SyncRecordKey] {
        try runner.all(
            "SELECT collection, key FROM sync_operation_changes WHERE sequence = ?1", sequence) { SyncRecordKey($0) }
    }

    func isPending(_ sequence: Int64) throws -> Bool {
        try runner.exists("SELECT 1 FROM sync_operations WHERE sequence = ?1", sequence)
    }

    /// Removes an answered operation and its changes.
    func delete(_ sequence: Int64) throws {
        try runner.execute("DELETE FROM sync_operation_changes WHERE sequence = ?1", sequence)
        try runner.execute("DELETE FROM sync_operations WHERE sequence = ?1", sequence)
    }

    /// Whether a pending operation other than `sequence` changes the record.
    func hasChange(_ record: SyncRecordKey, besides sequence: Int64) throws -> Bool {
        try runner.exists(
            "SELECT 1 FROM sync_operation_changes WHERE collection = ?1 AND key = ?2 AND sequence != ?3 LIMIT 1",
            record.collection, record.key, sequence, collection: record.collection, key: record.key)
    }

    /// Whether any local change is pending (any record).
    func hasChanges() throws -> Bool {
        try runner.exists("SELECT 1 FROM sync_operation_changes LIMIT 1")
    }

    /// Drops the record's changes from pending operations after `sequence` (its conflict
    /// superseded them), and removes operations left empty.
    func dropChanges(_ record: SyncRecordKey, after sequence: Int64) throws {
        let emptied = try runner.all(
            "DELETE FROM sync_operation_changes WHERE collection = ?1 AND key = ?2 AND sequence > ?3 RETURNING sequence",
            record.collection, record.key, sequence, collection: record.collection, key: record.key
        ) { $0.int64(at: 0) }
        for sequence in emptied {
            try runner.execute(
                """
                DELETE FROM sync_operations WHERE sequence = ?1
                AND NOT EXISTS (SELECT 1 FROM sync_operation_changes WHERE sequence = ?1)
                """, sequence)
        }
    }

    func count() throws -> Int {
        try runner.one("SELECT count(*) FROM sync_operations") { Int($0.int64(at: 0)) } ?? 0
    }
}

extension SyncRecordKey {
    /// The record of a row `collection, key`.
    init(_ statement: Statement) {
        self.init(collection: statement.string(at: 0), key: statement.string(at: 1))
    }
}
