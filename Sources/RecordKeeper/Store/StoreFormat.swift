/// The on-disk format of a RecordKeeper store: a contract with data already in people's hands.
///
/// `docs/FORMAT.md` documents every version. Rules for changing it:
/// - never edit a shipped migration; add a new one with the next version;
/// - every migration runs in one immediate transaction together with the `user_version` bump;
/// - a store whose version is newer than ``currentVersion`` is refused, never downgraded.
enum StoreFormat {
    /// `PRAGMA application_id` of every RecordKeeper store: the ASCII bytes "RKst".
    static let applicationID: Int32 = 0x524B_7374

    /// The newest format this library reads and writes.
    static var currentVersion: Int { migrations.last?.version ?? 0 }

    /// The ordered plan that brings a store from any older format to ``currentVersion``.
    static let migrations: [Migration] = [
        Migration(
            version: 1,
            name: "collections, records and the version sequence",
            sql: """
                CREATE TABLE collections (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE
                );
                CREATE TABLE records (
                    collection_id INTEGER NOT NULL REFERENCES collections(id),
                    key TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    version INTEGER NOT NULL,
                    PRIMARY KEY (collection_id, key)
                ) WITHOUT ROWID;
                CREATE TABLE store_meta (
                    name TEXT PRIMARY KEY,
                    value INTEGER NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO store_meta (name, value) VALUES ('last_version', 0);
                """
        ),
        Migration(
            version: 2,
            name: "the outbox of operations for a server",
            sql: """
                CREATE TABLE outbox (
                    sequence INTEGER PRIMARY KEY,
                    id BLOB NOT NULL UNIQUE,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    ordering_key TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL,
                    next_attempt_at INTEGER NOT NULL,
                    last_error TEXT,
                    dead INTEGER NOT NULL DEFAULT 0,
                    claimed_by TEXT,
                    claimed_until INTEGER
                );
                """
        ),
        Migration(
            version: 3,
            name: "the change log that change streams of every connection read",
            sql: """
                CREATE TABLE change_log (
                    seq INTEGER PRIMARY KEY,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL
                );
                """
        ),
        Migration(
            version: 4,
            name: "the item version of each collection",
            sql: """
                ALTER TABLE collections ADD COLUMN item_version INTEGER;
                """
        ),
        Migration(
            version: 5,
            name: "the device side of sync: registration, state, pending operations, server versions, conflicts",
            sql: """
                ALTER TABLE collections ADD COLUMN synced INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE sync_collections (
                    name TEXT PRIMARY KEY,
                    policy TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE sync_state (
                    name TEXT PRIMARY KEY,
                    value
                ) WITHOUT ROWID;
                CREATE TABLE sync_operations (
                    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE sync_operation_changes (
                    sequence INTEGER NOT NULL,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    payload BLOB,
                    PRIMARY KEY (sequence, collection, key)
                ) WITHOUT ROWID;
                CREATE INDEX sync_operation_changes_record ON sync_operation_changes (collection, key);
                CREATE TABLE sync_records (
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    server_version INTEGER,
                    aside_payload BLOB,
                    aside_deleted INTEGER NOT NULL DEFAULT 0,
                    aside_version INTEGER,
                    PRIMARY KEY (collection, key)
                ) WITHOUT ROWID;
                CREATE TABLE sync_conflicts (
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    local_payload BLOB,
                    local_deleted INTEGER NOT NULL,
                    server_payload BLOB,
                    server_deleted INTEGER NOT NULL,
                    server_version INTEGER,
                    PRIMARY KEY (collection, key)
                ) WITHOUT ROWID;
                """
        ),
        Migration(
            version: 6,
            name: "the date and key strategies of each collection's payloads",
            sql: """
                ALTER TABLE collections ADD COLUMN payload_coding TEXT;
                """
        ),
        Migration(
            version: 7,
            name: "the fields each collection declared an index on",
            sql: """
                CREATE TABLE declared_indexes (
                    collection_id INTEGER NOT NULL REFERENCES collections(id),
                    field TEXT NOT NULL,
                    PRIMARY KEY (collection_id, field)
                ) WITHOUT ROWID;
                """
        ),
        Migration(
            version: 8,
            name: "the item version of synced payloads: pending changes, pulled records, values kept aside, conflicts",
            sql: """
                ALTER TABLE sync_operation_changes ADD COLUMN item_version INTEGER;
                ALTER TABLE sync_records ADD COLUMN item_version INTEGER;
                ALTER TABLE sync_records ADD COLUMN aside_item_version INTEGER;
                ALTER TABLE sync_conflicts ADD COLUMN local_item_version INTEGER;
                ALTER TABLE sync_conflicts ADD COLUMN server_item_version INTEGER;
                CREATE INDEX sync_records_item_version ON sync_records (collection, item_version)
                    WHERE item_version IS NOT NULL;
                """
        ),
        Migration(
            version: 9,
            name: "outbox attempts that never reached the server",
            sql: """
                ALTER TABLE outbox ADD COLUMN unreachable_attempts INTEGER NOT NULL DEFAULT 0;
                """
        ),
    ]
}
