extension PostgresSyncSchema {
    /// Grants `role` what serving the sync schema needs, and nothing more: `USAGE` on the
    /// schema holding the sync tables (the connection's current schema), `SELECT`, `INSERT`,
    /// `UPDATE` and `DELETE` on the sync tables, and `SELECT` on the schema version table. With
    /// that, and a current schema, a ``PostgresSyncServer`` (and `recordkeeper-relay serve`)
    /// works without `CREATE` anywhere. The sync tables have no sequences.
    ///
    /// Run it as the tables' owner, after ``migrate(_:timeout:)`` (`recordkeeper-relay migrate
    /// --grant ROLE`). The role must exist; it is named as a bound parameter and quoted by
    /// PostgreSQL (`format('%I')`), never spliced into SQL.
    ///
    /// ```swift
    /// try await PostgresSyncSchema.migrate(owner)
    /// try await PostgresSyncSchema.grantServing(to: "relay", owner)
    /// ```
    ///
    /// - Throws: ``PostgresError`` (a role that does not exist: SQLSTATE 42704; not the owner:
    ///   42501), with nothing granted.
    public static func grantServing(to role: String, _ connection: PostgresConnection) async throws {
        try await connection.transaction(operation: "grant the serving role") { connection in
            try connection.execute(
                """
                CREATE OR REPLACE FUNCTION pg_temp.recordkeeper_grant_serving(role text) RETURNS void
                LANGUAGE plpgsql AS $$
                BEGIN
                    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), role);
                    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON recordkeeper_sync_spaces, '
                        || 'recordkeeper_sync_records, recordkeeper_sync_operations, recordkeeper_sync_devices, recordkeeper_sync_cursors TO %I', role);
                    EXECUTE format('GRANT SELECT ON recordkeeper_sync_schema TO %I', role);
                END $$
                """, operation: "grant the serving role: prepare")
            try connection.execute(
                "SELECT pg_temp.recordkeeper_grant_serving($1)", [.text(role)], operation: "grant the serving role")
        }
    }
}
