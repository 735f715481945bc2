import Foundation

/// The gateway of sync's unresolved conflicts (format 5, docs/FORMAT.md: `sync_conflicts`;
/// the item versions of both sides from format 8), on the connection of one request: one row
/// per record whose local change the server refused, with both sides, until it is resolved.
struct ConflictsTable {
    let runner: StatementRunner

    /// Records (or replaces) the conflict of one record.
    func record(_ conflict: SyncRecordConflict) throws {
        try runner.execute(
            """
            INSERT OR REPLACE INTO sync_conflicts
                (collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version,
                 local_item_version, server_item_version)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            """, conflict.collection, conflict.key, conflict.local, conflict.local == nil ? 1 : 0,
            conflict.server, conflict.server == nil ? 1 : 0, conflict.serverVersion?.rawValue,
            conflict.localItemVersion, conflict.serverItemVersion, collection: conflict.collection, key: conflict.key)
    }

    /// Updates the server side of an unresolved conflict after a newer server value was pulled.
    func updateServerSide(_ record: SyncRecordKey, value: SyncValue, version: Int64, itemVersion: Int?) throws {
        try runner.execute(
            """
            UPDATE sync_conflicts SET server_payload = ?3, server_deleted = ?4, server_version = ?5,
                server_item_version = ?6
            WHERE collection = ?1 AND key = ?2
            """, record.collection, record.key, value.payload, value.payload == nil ? 1 : 0, version, itemVersion,
            collection: record.collection, key: record.key)
    }

    /// Whether any conflict is unresolved.
    func any() throws -> Bool {
        try runner.exists("SELECT 1 FROM sync_conflicts LIMIT 1")
    }

    func count() throws -> Int {
        try runner.one("SELECT count(*) FROM sync_conflicts") { Int($0.int64(at: 0)) } ?? 0
    }

    /// Every unresolved conflict, by collection and key.
    func all() throws -> [SyncRecordConflict] {
        let versions = try haveItemVersions()
        return try runner.all(
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
        ) { Self.conflict($0, itemVersions: versions) }
    }

    /// The unresolved conflict of `record`, nil when it has none.
    func conflict(_ record: SyncRecordKey) throws -> SyncRecordConflict? {
        let versions = try haveItemVersions()
        return try runner.one(
            versions
                ? """
                SELECT collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version,
                       local_item_version, server_item_version
                FROM sync_conflicts WHERE collection = ?1 AND key = ?2
                """
                : """
                SELECT collection, key, local_payload, local_deleted, server_payload, server_deleted, server_version
                FROM sync_conflicts WHERE collection = ?1 AND key = ?2
                """, record.collection, record.key, collection: record.collection, key: record.key
        ) { Self.conflict($0, itemVersions: versions) }
    }

    /// Whether `sync_conflicts` has the item-version columns of format 8 (a read of an older
    /// format, which never migrates, reads the conflicts without them).
    private func haveItemVersions() throws -> Bool {
        try runner.exists("SELECT 1 FROM pragma_table_info('sync_conflicts') WHERE name = 'server_item_version'")
    }

    private static func conflict(_ statement: Statement, itemVersions: Bool) -> SyncRecordConflict {
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
    func delete(of sequence: Int64) throws {
        try runner.execute(
            """
            DELETE FROM sync_conflicts WHERE EXISTS (
                SELECT 1 FROM sync_operation_changes c
                WHERE c.sequence = ?1 AND c.collection = sync_conflicts.collection AND c.key = sync_conflicts.key)
            """, sequence)
    }

    /// Drops the conflict of `record`.
    func delete(_ record: SyncRecordKey) throws {
        try runner.execute(
            "DELETE FROM sync_conflicts WHERE collection = ?1 AND key = ?2", record.collection, record.key,
            collection: record.collection, key: record.key)
    }
}
