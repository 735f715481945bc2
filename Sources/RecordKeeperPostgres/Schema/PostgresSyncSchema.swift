import RecordKeeperSync

/// The sync server's tables in PostgreSQL, created and migrated forward by the library in
/// numbered steps (docs/SYNC.md describes each table).
///
/// Every step runs in its own transaction together with its row in `recordkeeper_sync_schema`,
/// under a transaction-level advisory lock, so servers starting at once migrate one after the
/// other and a failed step leaves the schema as it was. A schema newer than this library knows
/// is refused, untouched.
public enum PostgresSyncSchema {
    /// One forward step.
    struct Step: Sendable {
        let version: Int64
        let name: String
        let statements: [StaticString]
    }

    /// The schema version this library writes.
    public static var currentVersion: Int64 { steps[steps.count - 1].version }

    /// The version of every step, in order (for tests).
    package static var versions: [Int64] { steps.map(\.version) }

    /// The advisory lock key migrations hold ("RKSYNC" in ASCII).
    static let lockKey: Int64 = 0x524B_5359_4E43

    static let steps: [Step] = [
        Step(
            version: 1, name: "spaces, records, operations, devices",
            statements: [
                """
                CREATE TABLE recordkeeper_sync_spaces (
                    space text COLLATE "C" PRIMARY KEY,
                    counter bigint NOT NULL DEFAULT 0 CHECK (counter >= 0)
                )
                """,
                """
                CREATE TABLE recordkeeper_sync_records (
                    space text COLLATE "C" NOT NULL,
                    collection text COLLATE "C" NOT NULL,
                    key text COLLATE "C" NOT NULL,
                    version bigint NOT NULL,
                    payload bytea,
                    deleted boolean NOT NULL,
                    writer_device text COLLATE "C" NOT NULL,
                    writer_base bigint,
                    PRIMARY KEY (space, collection, key),
                    CHECK (deleted = (payload IS NULL))
                )
                """,
                """
                CREATE INDEX recordkeeper_sync_records_feed
                    ON recordkeeper_sync_records (space, version, collection, key)
                """,
                """
                CREATE TABLE recordkeeper_sync_operations (
                    space text COLLATE "C" NOT NULL,
                    operation_id uuid NOT NULL,
                    device text COLLATE "C" NOT NULL,
                    sequence bigint NOT NULL,
                    version bigint,
                    outcome jsonb NOT NULL,
                    received_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (space, operation_id)
                )
                """,
                """
                CREATE TABLE recordkeeper_sync_devices (
                    space text COLLATE "C" NOT NULL,
                    device text COLLATE "C" NOT NULL,
                    last_sequence bigint NOT NULL,
                    PRIMARY KEY (space, device)
                )
                """,
            ]),
        // An applied outcome is `.applied(version)` with the row's version: storing its JSON
        // too took half the time of recording an operation. Rows of version 1 keep their JSON
        // and read as before.
        Step(
            version: 2, name: "applied outcomes are their version",
            statements: [
                "ALTER TABLE recordkeeper_sync_operations ALTER COLUMN outcome DROP NOT NULL",
                """
                ALTER TABLE recordkeeper_sync_operations
                    ADD CONSTRAINT recordkeeper_sync_operations_outcome
                    CHECK (outcome IS NOT NULL OR version IS NOT NULL)
                """,
            ]),
        // Per-device chains: the last operation recorded of each device, so an operation
        // naming another predecessor (a copy of a store writing under the same device id) is
        // refused. Devices already recorded take their last operation from the operation log.
        Step(
            version: 3, name: "the last operation of every device",
            statements: [
                "ALTER TABLE recordkeeper_sync_devices ADD COLUMN last_operation uuid",
                """
                UPDATE recordkeeper_sync_devices d SET last_operation = o.operation_id
                FROM recordkeeper_sync_operations o
                WHERE o.space = d.space AND o.device = d.device AND o.sequence = d.last_sequence
                """,
            ]),
        // Item versions travel: the item version each record's payload was written at (NULL:
        // byte-level data, and every record written before), stored by pushes and returned by
        // pulls, so that a device never migrates a payload another device already migrated.
        Step(
            version: 4, name: "the item version of every record",
            statements: [
                "ALTER TABLE recordkeeper_sync_records ADD COLUMN item_version bigint",
            ]),
        // Pulls by collection: each collection's changes in feed order, so a pull of some
        // collections reads only their rows, never the other collections' changes between them.
        Step(
            version: 5, name: "a feed index per collection",
            statements: [
                """
                CREATE INDEX recordkeeper_sync_records_collection_feed
                    ON recordkeeper_sync_records (space, collection, version, key)
                """,
            ]),
        // Compaction with a horizon (docs/SYNC.md "Compaction"): each space's horizon, each
        // device's highest compacted sequence (re-deliveries at or below it are recognised),
        // the lowest cursor handed out per space and hour, and the operations by age, for
        // batched deletion.
        Step(
            version: 6, name: "compaction horizon",
            statements: [
                "ALTER TABLE recordkeeper_sync_spaces ADD COLUMN horizon bigint NOT NULL DEFAULT 0 CHECK (horizon >= 0)",
                "ALTER TABLE recordkeeper_sync_devices ADD COLUMN compacted_sequence bigint NOT NULL DEFAULT 0",
                """
                CREATE TABLE recordkeeper_sync_cursors (
                    space text COLLATE "C" NOT NULL,
                    bucket bigint NOT NULL,
                    lowest bigint NOT NULL,
                    PRIMARY KEY (space, bucket)
                )
                """,
                """
                CREATE INDEX recordkeeper_sync_operations_received
                    ON recordkeeper_sync_operations (space, received_at, operation_id)
                """,
            ]),
    ]

    /// Brings the connection's database to ``currentVersion``; does nothing when it is there.
    ///
    /// - Returns: the versions applied now (empty when the schema was current).
    /// - Throws: ``SyncError`` with ``SyncError/Code/newerServerSchema`` when the database has a
    ///   newer schema (nothing changed); ``PostgresError`` when a step fails (that step rolled
    ///   back, earlier steps kept).
    ///
    /// Each step must end within `timeout` (waiting for another server's migration included).
    @discardableResult
    public static func migrate(
        _ connection: PostgresConnection, timeout: Duration = PostgresSyncServer.defaultTimeout
    ) async throws -> [Int64] {
        try await migrate(connection, upTo: currentVersion, timeout: timeout)
    }

    /// Brings the connection's database to `target` (at most ``currentVersion``), for tests
    /// of later steps over data an earlier version wrote.
    @discardableResult
    package static func migrate(
        _ connection: PostgresConnection, upTo target: Int64, timeout: Duration = PostgresSyncServer.defaultTimeout
    ) async throws -> [Int64] {
        // A current schema needs no CREATE: a role with only DML rights serves it
        // (docs/RELAY.md "The database role"). Only a schema behind takes the lock and migrates.
        let found = try await connection.withTimeout(timeout) { connection in try readVersion(connection) }
        if found > currentVersion {
            throw SyncError(
                .newerServerSchema, "the server's sync schema is version \(found); this library knows up to \(currentVersion)")
        }
        if found >= target { return [] }
        var applied: [Int64] = []
        for step in steps where step.version <= target {
            let ran = try await connection.withTimeout(timeout) { connection in
                try connection.transaction(operation: "migrate to schema \(step.version)") {
                connection throws -> Bool in
                try connection.execute(
                    "SELECT pg_advisory_xact_lock($1)", [.int64(lockKey)],
                    operation: "migrate: take the migration lock")
                // "relation already exists, skipping" is expected on every start after the first.
                try connection.execute(
                    "SET LOCAL client_min_messages = warning", operation: "migrate: quiet notices")
                try connection.execute(
                    """
                    CREATE TABLE IF NOT EXISTS recordkeeper_sync_schema (
                        version bigint PRIMARY KEY,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """, operation: "migrate: create the schema version table")
                let current = try connection.execute(
                    "SELECT coalesce(max(version), 0) FROM recordkeeper_sync_schema",
                    operation: "migrate: read the schema version"
                ).int64(0, 0)
                if current > currentVersion {
                    throw SyncError(
                        .newerServerSchema,
                        "the server's sync schema is version \(current); this library knows up to \(currentVersion)")
                }
                if current >= step.version { return false }
                for statement in step.statements {
                    try connection.execute(statement, operation: "migrate to schema \(step.version)")
                }
                try connection.execute(
                    "INSERT INTO recordkeeper_sync_schema (version, name) VALUES ($1, $2)",
                    [.int64(step.version), .text(step.name)],
                    operation: "migrate: record schema \(step.version)")
                return true
                }
            }
            if ran { applied.append(step.version) }
        }
        // A step may add a table: the roles granted serving before it get their rights on it
        // too, or every request of theirs touching it would fail for want of a permission.
        if !applied.isEmpty, target == currentVersion { try await renewServingRoles(connection) }
        return applied
    }

    /// Grants every role granted serving before (``servingRoles(_:)``) what serving needs now,
    /// on every sync table, and returns them: none when this role may not grant on the tables.
    @discardableResult
    package static func renewServingRoles(_ connection: PostgresConnection) async throws -> [String] {
        let roles = try await servingRoles(connection)
        for role in roles { try await grantServing(to: role, connection) }
        return roles
    }

    /// The roles that were granted serving (``grantServing(to:_:)``): those other than the
    /// owner holding `SELECT`, `INSERT`, `UPDATE` and `DELETE` on `recordkeeper_sync_spaces`
    /// by grants of their own (a role given less, for another purpose, is not one). Empty when
    /// the connection's role may not grant on the tables (neither their owner nor a member of
    /// the owner's role): it could not renew anything.
    package static func servingRoles(_ connection: PostgresConnection) async throws -> [String] {
        try await connection.transaction(.readCommitted, readOnly: true, operation: "read the serving roles") { connection in
            let result = try connection.execute(
                """
                SELECT r.rolname FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
                JOIN pg_roles r ON r.oid = a.grantee
                WHERE c.oid = 'recordkeeper_sync_spaces'::regclass AND a.grantee <> c.relowner
                    AND pg_has_role(current_user, c.relowner, 'USAGE')
                    AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE')
                GROUP BY r.rolname HAVING count(DISTINCT a.privilege_type) = 4
                ORDER BY r.rolname
                """, operation: "read the serving roles")
            return try (0..<result.rowCount).map { try result.string($0, 0) }
        }
    }

    /// The database's schema version (0 when the sync tables were never created).
    public static func version(_ connection: PostgresConnection) async throws -> Int64 {
        try await readVersion(connection)
    }

    private static func readVersion(_ connection: isolated PostgresConnection) throws -> Int64 {
        try connection.transaction(.readCommitted, readOnly: true, operation: "read the schema version") {
            connection throws -> Int64 in
            let exists = try connection.execute(
                "SELECT to_regclass('recordkeeper_sync_schema') IS NOT NULL",
                operation: "read the schema version"
            ).bool(0, 0)
            if !exists { return 0 }
            return try connection.execute(
                "SELECT coalesce(max(version), 0) FROM recordkeeper_sync_schema",
                operation: "read the schema version"
            ).int64(0, 0)
        }
    }
}
