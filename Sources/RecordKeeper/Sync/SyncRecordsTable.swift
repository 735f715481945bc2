import Foundation

/// A server value kept aside while local changes of its record are pending.
struct SyncAside: Sendable {
    let record: SyncRecordKey
    let value: SyncValue
    let version: Int64
    /// The item version the value was written at (format 8).
    let itemVersion: Int?
}

extension SyncAside {
    /// The value aside of a row with `aside_payload, aside_deleted, aside_version,
    /// aside_item_version` from `column` on.
    init(record: SyncRecordKey, _ statement: Statement, from column: Int32) {
        let value: SyncValue =
            statement.int64(at: column + 1) != 0 || statement.isNull(at: column)
            ? .tombstone : .payload(statement.data(at: column))
        self.init(
            record: record, value: value, version: statement.int64(at: column + 2),
            itemVersion: statement.isNull(at: column + 3) ? nil : Int(statement.int64(at: column + 3)))
    }
}

/// What the store holds about one record's sync, for a pull: the server version its local
/// value is based on, the version of a server value kept aside, and whether local changes of
/// it are pending.
struct LocalSyncRecordState: Sendable {
    let serverVersion: Int64?
    let asideVersion: Int64?
    let pending: Bool
}

/// The gateway of what the store knows of each synced record on the server (format 5,
/// docs/FORMAT.md: `sync_records`), on the connection of one request: the server version its
/// local value is based on, a server value kept aside while local changes are pending, the
/// item version of a pulled value (format 8), and a resync's forgetting of records the server
/// no longer has (docs/SYNC.md "Resync").
struct SyncRecordsTable {
    let runner: StatementRunner

    // MARK: Server versions and values kept aside

    /// One record's sync state, in one statement.
    func state(_ record: SyncRecordKey) throws -> LocalSyncRecordState {
        try runner.one(
            """
            SELECT s.server_version, s.aside_version,
                   EXISTS (SELECT 1 FROM sync_operation_changes c WHERE c.collection = ?1 AND c.key = ?2)
            FROM (SELECT 1) LEFT JOIN sync_records s ON s.collection = ?1 AND s.key = ?2
            """, record.collection, record.key, collection: record.collection, key: record.key
        ) { statement in
            LocalSyncRecordState(
                serverVersion: statement.isNull(at: 0) ? nil : statement.int64(at: 0),
                asideVersion: statement.isNull(at: 1) ? nil : statement.int64(at: 1),
                pending: statement.int64(at: 2) != 0)
        } ?? LocalSyncRecordState(serverVersion: nil, asideVersion: nil, pending: false)
    }

    /// For a record without pending local changes: sets its server version to `version` and
    /// forgets any value kept aside, unless the store already has that version or a later one.
    /// One statement; returns whether it changed (the pulled value is then the record's value).
    func advanceServerVersion(_ record: SyncRecordKey, to version: Int64, itemVersion: Int?) throws -> Bool {
        // No RETURNING: it costs more than the upsert itself; the change count tells.
        try runner.execute(
            """
            INSERT INTO sync_records (collection, key, server_version, item_version) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version,
                item_version = excluded.item_version,
                aside_payload = NULL, aside_deleted = 0, aside_version = NULL, aside_item_version = NULL
            WHERE sync_records.server_version IS NULL OR sync_records.server_version < excluded.server_version
            """, record.collection, record.key, version, itemVersion, collection: record.collection, key: record.key)
    }

    /// Sets the server version the record's local value is based on (nil: the server has
    /// never had it); with `clearingAside`, forgets a server value kept aside.
    func setServerVersion(_ record: SyncRecordKey, _ version: Int64?, clearingAside: Bool) throws {
        if clearingAside {
            try runner.execute(
                """
                INSERT INTO sync_records (collection, key, server_version) VALUES (?1, ?2, ?3)
                ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version,
                    aside_payload = NULL, aside_deleted = 0, aside_version = NULL, aside_item_version = NULL
                """, record.collection, record.key, version, collection: record.collection, key: record.key)
        } else {
            try runner.execute(
                """
                INSERT INTO sync_records (collection, key, server_version) VALUES (?1, ?2, ?3)
                ON CONFLICT (collection, key) DO UPDATE SET server_version = excluded.server_version
                """, record.collection, record.key, version, collection: record.collection, key: record.key)
        }
    }

    /// Records the item version of the record's local value when it is a server value (pulled,
    /// kept aside and then taken, a conflict's server side); nil: the collection's.
    func setItemVersion(_ record: SyncRecordKey, _ itemVersion: Int?) throws {
        try runner.execute(
            """
            INSERT INTO sync_records (collection, key, item_version) VALUES (?1, ?2, ?3)
            ON CONFLICT (collection, key) DO UPDATE SET item_version = excluded.item_version
            """, record.collection, record.key, itemVersion, collection: record.collection, key: record.key)
    }

    /// Keeps a pulled server value aside while local changes of the record are pending.
    func setAside(_ record: SyncRecordKey, value: SyncValue, version: Int64, itemVersion: Int?) throws {
        try runner.execute(
            """
            INSERT INTO sync_records
                (collection, key, server_version, aside_payload, aside_deleted, aside_version, aside_item_version)
            VALUES (?1, ?2, NULL, ?3, ?4, ?5, ?6)
            ON CONFLICT (collection, key) DO UPDATE SET aside_payload = excluded.aside_payload,
                aside_deleted = excluded.aside_deleted, aside_version = excluded.aside_version,
                aside_item_version = excluded.aside_item_version
            """, record.collection, record.key, value.payload, value.payload == nil ? 1 : 0, version, itemVersion,
            collection: record.collection, key: record.key)
    }

    /// The server value kept aside for a record, with its version; nil when there is none.
    func aside(_ record: SyncRecordKey) throws -> SyncAside? {
        try runner.one(
            """
            SELECT aside_payload, aside_deleted, aside_version, aside_item_version FROM sync_records
            WHERE collection = ?1 AND key = ?2 AND aside_version IS NOT NULL
            """, record.collection, record.key, collection: record.collection, key: record.key
        ) { SyncAside(record: record, $0, from: 0) }
    }

    // MARK: Resync

    /// Records whose known server version is at or below `horizon`, with no pending local
    /// change and no unresolved conflict: the ones a resync removes when the server no longer
    /// has them.
    func settled(atOrBelow horizon: Int64) throws -> [SyncRecordKey] {
        try runner.all(
            """
            SELECT s.collection, s.key FROM sync_records s
            WHERE s.server_version <= ?1
                AND NOT EXISTS (SELECT 1 FROM sync_operation_changes c WHERE c.collection = s.collection AND c.key = s.key)
                AND NOT EXISTS (SELECT 1 FROM sync_conflicts f WHERE f.collection = s.collection AND f.key = s.key)
            """, horizon
        ) { SyncRecordKey($0) }
    }

    /// Forgets what the store knows of the record on the server (it is gone there): a later
    /// write of it is based on nothing.
    func forget(_ record: SyncRecordKey) throws {
        try runner.execute(
            "DELETE FROM sync_records WHERE collection = ?1 AND key = ?2", record.collection, record.key,
            collection: record.collection, key: record.key)
    }
}
