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

/// A server value kept aside while local changes of its record are pending.
struct SyncAside: Sendable {
    let record: SyncRecordKey
    let value: SyncValue
    let version: Int64
    /// The item version the value was written at (format 8).
    let itemVersion: Int?
}

/// A pending local operation (format 5, `sync_operations`), with its changes.
struct PendingSyncOperation: Sendable {
    let sequence: Int64
    let id: UUID
    var changes: [PendingSyncChange]
}

/// What the store holds about one record's sync, for a pull: the server version its local
/// value is based on, the version of a server value kept aside, and whether local changes of
/// it are pending.
struct LocalSyncRecordState: Sendable {
    let serverVersion: Int64?
    let asideVersion: Int64?
    let pending: Bool
}

/// The SQL of the device side of sync (format 5, docs/FORMAT.md), on the writer or a reader.
/// Every statement is a cached prepared statement; names are already validated.
extension RecordEngine {
    // MARK: Capture

    /// Writes one operation whose changes are `records`' current values (absent: tombstone).
    /// Returns its sequence.
    @discardableResult
    func captureSyncOperation(_ records: [SyncRecordKey]) throws -> Int64 {
        // A key the server cannot store would be refused with the whole push, again at every
        // push, blocking every later operation: the local write is refused instead.
        for record in records where record.key.utf8.contains(0) {
            throw keyWithNUL(record.key, collection: record.collection)
        }
        let sequence = try newSyncOperation()
        for record in records {
            try run(collection: record.collection, key: record.key) {
                // The value at commit, with the item version its collection records (nil: no
                // repository with item versions wrote it; also for a removed collection).
                try connection.withStatement(
                    """
                    INSERT INTO sync_operation_changes (sequence, collection, key, payload, item_version)
                    SELECT ?1, ?2, ?3, (SELECT r.payload FROM records r WHERE r.collection_id = c.id AND r.key = ?3),
                           c.item_version
                    FROM (SELECT 1) LEFT JOIN collections c ON c.name = ?2
                    """
                ) { statement in
                    try statement.bind(sequence, at: 1)
                    try statement.bind(record.collection, at: 2)
                    try statement.bind(record.key, at: 3)
                    try statement.run()
                }
            }
        }
        // A local write makes the record's value the collection's shape: an item version a
        // pulled value had (kept per record) no longer applies. Only records that have one
        // are touched (the partial index), usually none.
        try run {
            try connection.withStatement(
                """
                UPDATE sync_records SET item_version = NULL
                WHERE item_version IS NOT NULL
                AND (collection, key) IN (SELECT collection, key FROM sync_operation_changes WHERE sequence = ?1)
                """
            ) { statement in
                try statement.bind(sequence, at: 1)
                try statement.run()
            }
        }
        return sequence
    }

    /// The error for a key the sync server cannot store: refused locally, or it would be refused
    /// with the whole push, again at every push, blocking every later operation.
    private func keyWithNUL(_ key: String, collection: String) -> RecordStoreError {
        RecordStoreError(
            code: .invalidKey, operation: operation, collection: collection, key: key, path: path,
            detail: "a record of a synced collection cannot have a key containing a NUL character "
                + "(the sync server cannot store it); nothing was written")
    }

    /// A new, empty operation with a fresh id and the next sequence (never given out before:
    /// AUTOINCREMENT).
    private func newSyncOperation() throws -> Int64 {
        try run {
            try connection.withStatement(
                "INSERT INTO sync_operations (id, created_at) VALUES (?1, ?2) RETURNING sequence"
            ) { statement in
                try statement.bind(UUID().uuidString, at: 1)
                try statement.bind(Int64(Date().timeIntervalSince1970 * 1000), at: 2)
                guard try statement.step() else {
                    throw RecordStoreError(
                        code: .malformedRecord, operation: operation, path: path,
                        detail: "creating a sync operation returned no sequence")
                }
                let sequence = statement.int64(at: 0)
                while try statement.step() {}
                return sequence
            }
        }
    }

    /// Captures every record of collection `id` (`name`) as operations of at most `chunk`
    /// changes each (the initial upload when sync starts for a collection), in key order. Each
    /// operation is one `INSERT … SELECT` of the next `chunk` records after the last key
    /// captured. Returns how many operations it wrote.
    @discardableResult
    func captureExistingRecords(_ id: Int64, collection name: String, chunk: Int) throws -> Int {
        var last: [UInt8]?
        var operations = 0
        while true {
            let sequence = try newSyncOperation()
            let captured: [UInt8]? = try run(collection: name) {
                try connection.withStatement(
                    last == nil
                        ? """
                        INSERT INTO sync_operation_changes (sequence, collection, key, payload, item_version)
                        SELECT ?1, ?2, key, payload, (SELECT item_version FROM collections WHERE id = ?3)
                        FROM records WHERE collection_id = ?3
                        ORDER BY key LIMIT ?5 RETURNING key
                        """
                        : """
                        INSERT INTO sync_operation_changes (sequence, collection, key, payload, item_version)
                        SELECT ?1, ?2, key, payload, (SELECT item_version FROM collections WHERE id = ?3)
                        FROM records WHERE collection_id = ?3 AND key > ?4
                        ORDER BY key LIMIT ?5 RETURNING key
                        """
                ) { statement in
                    try statement.bind(sequence, at: 1)
                    try statement.bind(name, at: 2)
                    try statement.bind(id, at: 3)
                    if let last { try statement.bind(String(decoding: last, as: UTF8.self), at: 4) }
                    try statement.bind(Int64(chunk), at: 5)
                    // RETURNING gives no order: the chunk's greatest key in SQLite's (binary) order.
                    var greatest: [UInt8]?
                    while try statement.step() {
                        let key = Array(statement.string(at: 0).utf8)
                        if key.contains(0) { throw keyWithNUL(statement.string(at: 0), collection: name) }
                        if let current = greatest, !current.lexicographicallyPrecedes(key) { continue }
                        greatest = key
                    }
                    return greatest
                }
            }
            guard let captured else {
                // Nothing left: the operation just created stays empty, so it goes.
                try deleteSyncOperation(sequence)
                return operations
            }
            operations += 1
            last = captured
        }
    }

    // MARK: State and registration

    func syncStateString(_ name: StaticString) throws -> String? {
        try run {
            try connection.withStatement("SELECT value FROM sync_state WHERE name = ?1") { statement in
                try statement.bind(name.description, at: 1)
                guard try statement.step(), !statement.isNull(at: 0) else { return nil }
                return statement.string(at: 0)
            }
        }
    }

    func syncStateInteger(_ name: StaticString) throws -> Int64? {
        try run {
            try connection.withStatement("SELECT value FROM sync_state WHERE name = ?1") { statement in
                try statement.bind(name.description, at: 1)
                guard try statement.step(), !statement.isNull(at: 0) else { return nil }
                return statement.int64(at: 0)
            }
        }
    }

    func setSyncState(_ name: StaticString, _ value: String?) throws {
        try run {
            try connection.withStatement(
                "INSERT INTO sync_state (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            ) { statement in
                try statement.bind(name.description, at: 1)
                if let value { try statement.bind(value, at: 2) } else { try statement.bindNull(at: 2) }
                try statement.run()
            }
        }
    }

    func setSyncState(_ name: StaticString, integer value: Int64) throws {
        try run {
            try connection.withStatement(
                "INSERT INTO sync_state (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            ) { statement in
                try statement.bind(name.description, at: 1)
                try statement.bind(value, at: 2)
                try statement.run()
            }
        }
    }

    /// The stored pull cursor (`.start` when none).
    func syncCursor() throws -> SyncCursor {
        let counter = try syncStateInteger("cursor.counter") ?? 0
        if let collection = try syncStateString("cursor.collection"), let key = try syncStateString("cursor.key") {
            return SyncCursor(counter: counter, position: SyncCursor.Position(collection: collection, key: key))
        }
        return SyncCursor(counter: counter)
    }

    func setSyncCursor(_ cursor: SyncCursor) throws {
        try setSyncState("cursor.counter", integer: cursor.counter)
        try setSyncState("cursor.collection", cursor.position?.collection)
        try setSyncState("cursor.key", cursor.position?.key)
    }

    /// The registered collections and their policies.
    func syncCollections() throws -> [String: SyncConflictPolicy] {
        try run {
            try connection.withStatement("SELECT name, policy FROM sync_collections") { statement in
                var result: [String: SyncConflictPolicy] = [:]
                while try statement.step() {
                    let name = statement.string(at: 0)
                    let policy = statement.string(at: 1)
                    guard let value = SyncConflictPolicy(rawValue: policy) else {
                        throw RecordStoreError(
                            code: .malformedRecord, operation: operation, collection: name, path: path,
                            detail: "unknown sync policy '\(policy)' in sync_collections")
                    }
                    result[name] = value
                }
                return result
            }
        }
    }

    func registerSyncCollection(_ name: String, policy: SyncConflictPolicy) throws {
        try run(collection: name) {
            try connection.withStatement(
                """
                INSERT INTO sync_collections (name, policy) VALUES (?1, ?2)
                ON CONFLICT (name) DO UPDATE SET policy = excluded.policy
                """
            ) { statement in
                try statement.bind(name, at: 1)
                try statement.bind(policy.rawValue, at: 2)
                try statement.run()
            }
            try connection.withStatement("UPDATE collections SET synced = 1 WHERE name = ?1") { statement in
                try statement.bind(name, at: 1)
                try statement.run()
            }
        }
    }

    /// True when the store file has the tables of format 5 (reads of older formats answer
    /// "no sync" instead of failing; reads never migrate).
    func hasSyncTables() throws -> Bool {
        try run {
            try connection.withStatement(
                "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sync_state'"
            ) { try $0.step() }
        }
    }

    // MARK: Pending operations

    /// Up to `limit` pending operations after `sequence`, in order, without their changes.
    func pendingSyncOperations(after sequence: Int64, limit: Int) throws -> [(sequence: Int64, id: UUID)] {
        try run {
            try connection.withStatement(
                "SELECT sequence, id FROM sync_operations WHERE sequence > ?1 ORDER BY sequence LIMIT ?2"
            ) { statement in
                try statement.bind(sequence, at: 1)
                try statement.bind(Int64(limit), at: 2)
                var result: [(sequence: Int64, id: UUID)] = []
                while try statement.step() {
                    let text = statement.string(at: 1)
                    guard let id = UUID(uuidString: text) else {
                        throw RecordStoreError(
                            code: .malformedRecord, operation: operation, path: path,
                            detail: "sync operation \(statement.int64(at: 0)) has a malformed id '\(text)'")
                    }
                    result.append((statement.int64(at: 0), id))
                }
                return result
            }
        }
    }

    /// The changes of one pending operation (at most `limit` of them), each with its base (the
    /// record's server version now) and its collection's policy.
    func pendingSyncChanges(_ sequence: Int64, limit: Int = Int.max) throws -> [PendingSyncChange] {
        try run {
            try connection.withStatement(
                """
                SELECT c.collection, c.key, c.payload, s.server_version, p.policy, c.item_version
                FROM sync_operation_changes c
                LEFT JOIN sync_records s ON s.collection = c.collection AND s.key = c.key
                LEFT JOIN sync_collections p ON p.name = c.collection
                WHERE c.sequence = ?1
                LIMIT ?2
                """
            ) { statement in
                try statement.bind(sequence, at: 1)
                try statement.bind(Int64(limit), at: 2)
                var changes: [PendingSyncChange] = []
                while try statement.step() {
                    let collection = statement.string(at: 0)
                    let key = statement.string(at: 1)
                    var policy = SyncConflictPolicy.report
                    if !statement.isNull(at: 4) {
                        let stored = statement.string(at: 4)
                        guard let known = SyncConflictPolicy(rawValue: stored) else {
                            throw RecordStoreError(
                                code: .malformedRecord, operation: operation, collection: collection, key: key,
                                path: path, detail: "unknown sync policy '\(stored)' in sync_collections")
                        }
                        policy = known
                    }
                    changes.append(
                        PendingSyncChange(
                            collection: collection, key: key,
                            value: statement.isNull(at: 2) ? .tombstone : .payload(statement.data(at: 2)),
                            base: statement.isNull(at: 3) ? nil : SyncServerVersion(statement.int64(at: 3)),
                            policy: policy,
                            itemVersion: statement.isNull(at: 5) ? nil : Int(statement.int64(at: 5))))
                }
                return changes
            }
        }
    }

    /// The records of operation `sequence` that no other pending operation changes and whose
    /// server value kept aside is newer than `version` (that value wins when the operation is
    /// acknowledged with `version`). Usually none.
    func newerAsides(of sequence: Int64, than version: Int64) throws -> [SyncAside] {
        try run {
            try connection.withStatement(
                """
                SELECT c.collection, c.key, s.aside_payload, s.aside_deleted, s.aside_version, s.aside_item_version
                FROM sync_operation_changes c
                JOIN sync_records s ON s.collection = c.collection AND s.key = c.key
                WHERE c.sequence = ?1 AND s.aside_version > ?2
                AND NOT EXISTS (SELECT 1 FROM sync_operation_changes o
                                WHERE o.collection = c.collection AND o.key = c.key AND o.sequence != ?1)
                """
            ) { statement in
                try statement.bind(sequence, at: 1)
                try statement.bind(version, at: 2)
                var result: [SyncAside] = []
                while try statement.step() {
                    let value: SyncValue =
                        statement.int64(at: 3) != 0 || statement.isNull(at: 2) ? .tombstone : .payload(statement.data(at: 2))
                    result.append(
                        SyncAside(
                            record: SyncRecordKey(collection: statement.string(at: 0), key: statement.string(at: 1)),
                            value: value, version: statement.int64(at: 4),
                            itemVersion: statement.isNull(at: 5) ? nil : Int(statement.int64(at: 5))))
                }
                return result
            }
        }
    }

    /// Sets, in two statements, the server version of every record operation `sequence`
    /// changes to `version` (the server applied the operation with it): a record that another
    /// pending operation also changes keeps its value aside; any other forgets it, except the
    /// records whose value aside is newer than `version` (see ``newerAsides(of:than:)``), which
    /// are left alone.
    func acknowledgeSyncChanges(of sequence: Int64, version: Int64) throws {
        try run {
            try connection.withStatement(
                """
                INSERT INTO sync_records (collection, key, server_version)
                SELECT c.collection, c.key, ?2 FROM sync_operation_changes c
                WHERE c.sequence = ?1
                AND EXISTS (SELECT 1 FROM sync_operation_changes o
                            WHERE o.collection = c.collection AND o.key = c.key AND o.sequence != ?1)
                ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version
                """
            ) { statement in
                try statement.bind(sequence, at: 1)
                try statement.bind(version, at: 2)
                try statement.run()
            }
            try connection.withStatement(
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
                """
            ) { statement in
                try statement.bind(sequence, at: 1)
                try statement.bind(version, at: 2)
                try statement.run()
            }
        }
    }

    /// The records an operation still changes (conflicts of earlier operations may have
    /// dropped some); empty when the operation is no longer pending.
    func pendingSyncRecords(_ sequence: Int64) throws -> [SyncRecordKey] {
        try run {
            try connection.withStatement(
                "SELECT collection, key FROM sync_operation_changes WHERE sequence = ?1"
            ) { statement in
                try statement.bind(sequence, at: 1)
                return try Self.recordKeys(statement)
            }
        }
    }

    /// The rows of `statement` (collection, key) as record keys.
    static func recordKeys(_ statement: Statement) throws -> [SyncRecordKey] {
        var records: [SyncRecordKey] = []
        while try statement.step() {
            records.append(SyncRecordKey(collection: statement.string(at: 0), key: statement.string(at: 1)))
        }
        return records
    }

    func isSyncOperationPending(_ sequence: Int64) throws -> Bool {
        try run {
            try connection.withStatement("SELECT 1 FROM sync_operations WHERE sequence = ?1") { statement in
                try statement.bind(sequence, at: 1)
                return try statement.step()
            }
        }
    }

    /// Removes an answered operation and its changes.
    func deleteSyncOperation(_ sequence: Int64) throws {
        try run {
            try connection.withStatement("DELETE FROM sync_operation_changes WHERE sequence = ?1") { statement in
                try statement.bind(sequence, at: 1)
                try statement.run()
            }
            try connection.withStatement("DELETE FROM sync_operations WHERE sequence = ?1") { statement in
                try statement.bind(sequence, at: 1)
                try statement.run()
            }
        }
    }

    /// Whether a pending operation other than `sequence` changes the record.
    func hasPendingSyncChange(_ record: SyncRecordKey, besides sequence: Int64) throws -> Bool {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                "SELECT 1 FROM sync_operation_changes WHERE collection = ?1 AND key = ?2 AND sequence != ?3 LIMIT 1"
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                try statement.bind(sequence, at: 3)
                return try statement.step()
            }
        }
    }

    /// Drops the record's changes from pending operations after `sequence` (its conflict
    /// superseded them), and removes operations left empty.
    func dropPendingSyncChanges(_ record: SyncRecordKey, after sequence: Int64) throws {
        let emptied: [Int64] = try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                "DELETE FROM sync_operation_changes WHERE collection = ?1 AND key = ?2 AND sequence > ?3 RETURNING sequence"
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                try statement.bind(sequence, at: 3)
                var sequences: [Int64] = []
                while try statement.step() { sequences.append(statement.int64(at: 0)) }
                return sequences
            }
        }
        for sequence in emptied {
            try run {
                try connection.withStatement(
                    """
                    DELETE FROM sync_operations WHERE sequence = ?1
                    AND NOT EXISTS (SELECT 1 FROM sync_operation_changes WHERE sequence = ?1)
                    """
                ) { statement in
                    try statement.bind(sequence, at: 1)
                    try statement.run()
                }
            }
        }
    }

    func pendingSyncOperationCount() throws -> Int {
        try run {
            try connection.withStatement("SELECT count(*) FROM sync_operations") { statement in
                try statement.step() ? Int(statement.int64(at: 0)) : 0
            }
        }
    }

    // MARK: Server versions and values kept aside

    /// One record's sync state, in one statement.
    func syncRecordState(_ record: SyncRecordKey) throws -> LocalSyncRecordState {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                """
                SELECT s.server_version, s.aside_version,
                       EXISTS (SELECT 1 FROM sync_operation_changes c WHERE c.collection = ?1 AND c.key = ?2)
                FROM (SELECT 1) LEFT JOIN sync_records s ON s.collection = ?1 AND s.key = ?2
                """
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                guard try statement.step() else { return LocalSyncRecordState(serverVersion: nil, asideVersion: nil, pending: false) }
                return LocalSyncRecordState(
                    serverVersion: statement.isNull(at: 0) ? nil : statement.int64(at: 0),
                    asideVersion: statement.isNull(at: 1) ? nil : statement.int64(at: 1),
                    pending: statement.int64(at: 2) != 0)
            }
        }
    }

    /// Whether any local change is pending (any record).
    func hasPendingSyncChanges() throws -> Bool {
        try run {
            try connection.withStatement("SELECT 1 FROM sync_operation_changes LIMIT 1") { try $0.step() }
        }
    }

    /// For a record without pending local changes: sets its server version to `version` and
    /// forgets any value kept aside, unless the store already has that version or a later one.
    /// One statement; returns whether it changed (the pulled value is then the record's value).
    func advanceServerVersion(_ record: SyncRecordKey, to version: Int64, itemVersion: Int?) throws -> Bool {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                """
                INSERT INTO sync_records (collection, key, server_version, item_version) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version,
                    item_version = excluded.item_version,
                    aside_payload = NULL, aside_deleted = 0, aside_version = NULL, aside_item_version = NULL
                WHERE sync_records.server_version IS NULL OR sync_records.server_version < excluded.server_version
                """
            ) { statement in
                // No RETURNING: it costs more than the upsert itself; the change count tells.
                try bindRecordVersion(statement, record, version)
                try bindItemVersion(statement, itemVersion, at: 4)
                try statement.run()
                return connection.changes > 0
            }
        }
    }

    /// Sets the server version the record's local value is based on (nil: the server has
    /// never had it); with `clearingAside`, forgets a server value kept aside.
    func setServerVersion(_ record: SyncRecordKey, _ version: Int64?, clearingAside: Bool) throws {
        try run(collection: record.collection, key: record.key) {
            if clearingAside {
                try connection.withStatement(
                    """
                    INSERT INTO sync_records (collection, key, server_version) VALUES (?1, ?2, ?3)
                    ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version,
                        aside_payload = NULL, aside_deleted = 0, aside_version = NULL, aside_item_version = NULL
                    """
                ) { statement in
                    try bindRecordVersion(statement, record, version)
                    try statement.run()
                }
            } else {
                try connection.withStatement(
                    """
                    INSERT INTO sync_records (collection, key, server_version) VALUES (?1, ?2, ?3)
                    ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version
                    """
                ) { statement in
                    try bindRecordVersion(statement, record, version)
                    try statement.run()
                }
            }
        }
    }

    private func bindItemVersion(_ statement: Statement, _ itemVersion: Int?, at index: Int32) throws {
        if let itemVersion { try statement.bind(Int64(itemVersion), at: index) } else { try statement.bindNull(at: index) }
    }

    /// Records the item version of the record's local value when it is a server value (pulled,
    /// kept aside and then taken, a conflict's server side); nil: the collection's.
    func setSyncItemVersion(_ record: SyncRecordKey, _ itemVersion: Int?) throws {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                """
                INSERT INTO sync_records (collection, key, item_version) VALUES (?1, ?2, ?3)
                ON CONFLICT (collection, key) DO UPDATE SET item_version = excluded.item_version
                """
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                try bindItemVersion(statement, itemVersion, at: 3)
                try statement.run()
            }
        }
    }

    private func bindRecordVersion(_ statement: Statement, _ record: SyncRecordKey, _ version: Int64?) throws {
        try statement.bind(record.collection, at: 1)
        try statement.bind(record.key, at: 2)
        if let version { try statement.bind(version, at: 3) } else { try statement.bindNull(at: 3) }
    }

    /// Keeps a pulled server value aside while local changes of the record are pending.
    func setAside(_ record: SyncRecordKey, value: SyncValue, version: Int64, itemVersion: Int?) throws {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                """
                INSERT INTO sync_records
                    (collection, key, server_version, aside_payload, aside_deleted, aside_version, aside_item_version)
                VALUES (?1, ?2, NULL, ?3, ?4, ?5, ?6)
                ON CONFLICT (collection, key) DO UPDATE SET aside_payload = excluded.aside_payload,
                    aside_deleted = excluded.aside_deleted, aside_version = excluded.aside_version,
                    aside_item_version = excluded.aside_item_version
                """
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                if let payload = value.payload { try statement.bind(payload, at: 3) } else { try statement.bindNull(at: 3) }
                try statement.bind(value.payload == nil ? 1 : 0, at: 4)
                try statement.bind(version, at: 5)
                try bindItemVersion(statement, itemVersion, at: 6)
                try statement.run()
            }
        }
    }

    /// The server value kept aside for a record, with its version; nil when there is none.
    func aside(_ record: SyncRecordKey) throws -> SyncAside? {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                """
                SELECT aside_payload, aside_deleted, aside_version, aside_item_version FROM sync_records
                WHERE collection = ?1 AND key = ?2 AND aside_version IS NOT NULL
                """
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                guard try statement.step() else { return nil }
                let value: SyncValue =
                    statement.int64(at: 1) != 0 || statement.isNull(at: 0) ? .tombstone : .payload(statement.data(at: 0))
                return SyncAside(
                    record: record, value: value, version: statement.int64(at: 2),
                    itemVersion: statement.isNull(at: 3) ? nil : Int(statement.int64(at: 3)))
            }
        }
    }

    // MARK: Conflicts

    /// Records (or replaces) the conflict of one record.
    func recordSyncConflict(_ conflict: SyncRecordConflict) throws {
        try run(collection: conflict.collection, key: conflict.key) {
            try connection.withStatement(
                """
                INSERT OR REPLACE INTO sync_conflicts
                    (collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version,
                     local_item_version, server_item_version)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """
            ) { statement in
                try statement.bind(conflict.collection, at: 1)
                try statement.bind(conflict.key, at: 2)
                if let local = conflict.local { try statement.bind(local, at: 3) } else { try statement.bindNull(at: 3) }
                try statement.bind(conflict.local == nil ? 1 : 0, at: 4)
                if let server = conflict.server { try statement.bind(server, at: 5) } else { try statement.bindNull(at: 5) }
                try statement.bind(conflict.server == nil ? 1 : 0, at: 6)
                if let version = conflict.serverVersion {
                    try statement.bind(version.rawValue, at: 7)
                } else {
                    try statement.bindNull(at: 7)
                }
                try bindItemVersion(statement, conflict.localItemVersion, at: 8)
                try bindItemVersion(statement, conflict.serverItemVersion, at: 9)
                try statement.run()
            }
        }
    }

    /// Updates the server side of an unresolved conflict after a newer server value was pulled.
    func updateSyncConflictServerSide(_ record: SyncRecordKey, value: SyncValue, version: Int64, itemVersion: Int?) throws {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                """
                UPDATE sync_conflicts SET server_payload = ?3, server_deleted = ?4, server_version = ?5,
                    server_item_version = ?6
                WHERE collection = ?1 AND key = ?2
                """
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                if let payload = value.payload { try statement.bind(payload, at: 3) } else { try statement.bindNull(at: 3) }
                try statement.bind(value.payload == nil ? 1 : 0, at: 4)
                try statement.bind(version, at: 5)
                try bindItemVersion(statement, itemVersion, at: 6)
                try statement.run()
            }
        }
    }

    func hasSyncConflicts() throws -> Bool {
        try run {
            try connection.withStatement("SELECT 1 FROM sync_conflicts LIMIT 1") { try $0.step() }
        }
    }

    func syncConflictCount() throws -> Int {
        try run {
            try connection.withStatement("SELECT count(*) FROM sync_conflicts") { statement in
                try statement.step() ? Int(statement.int64(at: 0)) : 0
            }
        }
    }

    /// Every unresolved conflict, by collection and key.
    func syncConflicts() throws -> [SyncRecordConflict] {
        let versions = try conflictsHaveItemVersions()
        return try run {
            try connection.withStatement(
                versions
                    ? """
                    SELECT collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version,
                           local_item_version, server_item_version
                    FROM sync_conflicts ORDER BY collection, key
                    """
                    : """
                    SELECT collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version
                    FROM sync_conflicts ORDER BY collection, key
                    """
            ) { statement in
                var conflicts: [SyncRecordConflict] = []
                while try statement.step() { conflicts.append(Self.syncConflict(statement, itemVersions: versions)) }
                return conflicts
            }
        }
    }

    func syncConflict(_ record: SyncRecordKey) throws -> SyncRecordConflict? {
        let versions = try conflictsHaveItemVersions()
        return try run(collection: record.collection, key: record.key) {
            try connection.withStatement(
                versions
                    ? """
                    SELECT collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version,
                           local_item_version, server_item_version
                    FROM sync_conflicts WHERE collection = ?1 AND key = ?2
                    """
                    : """
                    SELECT collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version
                    FROM sync_conflicts WHERE collection = ?1 AND key = ?2
                    """
            ) { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                return try statement.step() ? Self.syncConflict(statement, itemVersions: versions) : nil
            }
        }
    }

    /// Whether `sync_conflicts` has the item-version columns of format 8 (a read of an older
    /// format, which never migrates, reads the conflicts without them).
    private func conflictsHaveItemVersions() throws -> Bool {
        try run {
            try connection.withStatement(
                "SELECT 1 FROM pragma_table_info('sync_conflicts') WHERE name = 'server_item_version'"
            ) { try $0.step() }
        }
    }

    private static func syncConflict(_ statement: Statement, itemVersions: Bool) -> SyncRecordConflict {
        SyncRecordConflict(
            collection: statement.string(at: 0), key: statement.string(at: 1),
            local: statement.int64(at: 3) != 0 || statement.isNull(at: 2) ? nil : statement.data(at: 2),
            server: statement.int64(at: 5) != 0 || statement.isNull(at: 4) ? nil : statement.data(at: 4),
            serverVersion: statement.isNull(at: 6) ? nil : SyncServerVersion(statement.int64(at: 6)),
            localItemVersion: !itemVersions || statement.isNull(at: 7) ? nil : Int(statement.int64(at: 7)),
            serverItemVersion: !itemVersions || statement.isNull(at: 8) ? nil : Int(statement.int64(at: 8)))
    }

    /// Drops the conflicts of the records pending operation `sequence` changes (the server
    /// applied it: the device's later write settled them).
    func deleteSyncConflicts(of sequence: Int64) throws {
        try run {
            try connection.withStatement(
                """
                DELETE FROM sync_conflicts WHERE EXISTS (
                    SELECT 1 FROM sync_operation_changes c
                    WHERE c.sequence = ?1 AND c.collection = sync_conflicts.collection AND c.key = sync_conflicts.key)
                """
            ) { statement in
                try statement.bind(sequence, at: 1)
                try statement.run()
            }
        }
    }

    func deleteSyncConflict(_ record: SyncRecordKey) throws {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement("DELETE FROM sync_conflicts WHERE collection = ?1 AND key = ?2") { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                try statement.run()
            }
        }
    }
}
