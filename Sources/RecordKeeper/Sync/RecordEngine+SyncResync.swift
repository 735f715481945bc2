import Foundation

/// The SQL of a resync (a pull from the start): the records the store knows on the server at or
/// below the compaction horizon, and forgetting one (docs/SYNC.md "Resync").
extension RecordEngine {
    /// Records whose known server version is at or below `horizon`, with no pending local
    /// change and no unresolved conflict: the ones a resync removes when the server no longer
    /// has them.
    func settledSyncRecords(atOrBelow horizon: Int64) throws -> [SyncRecordKey] {
        try run {
            try connection.withStatement(
                """
                SELECT s.collection, s.key FROM sync_records s
                WHERE s.server_version <= ?1
                    AND NOT EXISTS (SELECT 1 FROM sync_operation_changes c WHERE c.collection = s.collection AND c.key = s.key)
                    AND NOT EXISTS (SELECT 1 FROM sync_conflicts f WHERE f.collection = s.collection AND f.key = s.key)
                """
            ) { statement in
                try statement.bind(horizon, at: 1)
                return try Self.recordKeys(statement)
            }
        }
    }

    /// Forgets what the store knows of the record on the server (it is gone there): a later
    /// write of it is based on nothing.
    func forgetSyncRecord(_ record: SyncRecordKey) throws {
        try run(collection: record.collection, key: record.key) {
            try connection.withStatement("DELETE FROM sync_records WHERE collection = ?1 AND key = ?2") { statement in
                try statement.bind(record.collection, at: 1)
                try statement.bind(record.key, at: 2)
                try statement.run()
            }
        }
    }
}
