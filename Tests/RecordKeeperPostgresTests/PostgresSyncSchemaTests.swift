import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// The server schema: created by the library in numbered steps, recorded in
/// `recordkeeper_sync_schema`, idempotent, safe when servers start at once, and never touched
/// when it is newer than the library. Each test works in a private PostgreSQL schema.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
struct PostgresSyncSchemaTests {
    /// Runs `body` with connections whose search_path is a fresh schema, dropped afterwards.
    private func withPrivateSchema(
        _ body: (_ connect: () async throws -> PostgresConnection, _ name: String) async throws -> Void
    ) async throws {
        try await TestPostgres.withPrivateConnections(body)
    }

    private func tableCount(_ connection: PostgresConnection, schema: String) async throws -> Int64 {
        try await connection.transaction { connection in
            try connection.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'recordkeeper_sync_%'",
                [.text(schema)]
            ).int64(0, 0)
        }
    }

    @Test func `an empty database is migrated to the current version once`() async throws {
        try await withPrivateSchema { connect, name in
            let connection = try await connect()
            #expect(try await PostgresSyncSchema.version(connection) == 0)
            #expect(try await PostgresSyncSchema.migrate(connection) == PostgresSyncSchema.versions)
            #expect(try await PostgresSyncSchema.version(connection) == PostgresSyncSchema.currentVersion)
            #expect(try await tableCount(connection, schema: name) == 6)
            #expect(try await PostgresSyncSchema.migrate(connection) == [])
            // A server on it works.
            let server = try await PostgresSyncServer(connection: connection)
            let outcome = try await server.push(space: "s", operations: [operation("d", 1, put("c", "k", "v", base: nil))])
            #expect(outcome.first?.result == .applied(SyncServerVersion(1)))
        }
    }

    @Test func `servers starting at once migrate one after the other`() async throws {
        try await withPrivateSchema { connect, _ in
            let first = try await connect()
            let second = try await connect()
            async let a = PostgresSyncSchema.migrate(first)
            async let b = PostgresSyncSchema.migrate(second)
            let applied = try await [a, b]
            // Each step ran once, by one of them (each step is its own transaction under the
            // lock, so one may take step 1 and the other step 2).
            #expect(applied.joined().sorted() == PostgresSyncSchema.versions)
        }
    }

    @Test func `operations recorded under schema 1 answer re-deliveries after the migration to 2`() async throws {
        try await withPrivateSchema { connect, _ in
            let connection = try await connect()
            #expect(try await PostgresSyncSchema.migrate(connection, upTo: 1) == [1])
            // What a schema-1 server stored: every outcome as JSON, applied ones too.
            let applied = operation("phone", 1, put("notes", "a", "A1", base: nil))
            let conflicting = operation("laptop", 1, put("notes", "a", "L", base: nil))
            let conflict = SyncOutcome(
                conflicting,
                result: .conflict([
                    SyncConflict(
                        collection: "notes", key: "a", base: nil,
                        server: SyncRecordState(value: .text("A1"), version: SyncServerVersion(1)))
                ]))
            let appliedJSON = try OutcomeJSON.encode(SyncOutcome(applied, result: .applied(SyncServerVersion(1))))
            let conflictJSON = try OutcomeJSON.encode(conflict)
            try await connection.transaction { connection in
                try connection.execute(
                    "INSERT INTO recordkeeper_sync_spaces (space, counter) VALUES ('s', 1)")
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_records
                        (space, collection, key, version, payload, deleted, writer_device, writer_base)
                    VALUES ('s', 'notes', 'a', 1, $1, false, 'phone', NULL)
                    """, [.bytes(Data("A1".utf8))])
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_operations (space, operation_id, device, sequence, version, outcome)
                    VALUES ('s', $1::uuid, 'phone', 1, 1, $2::jsonb), ('s', $3::uuid, 'laptop', 1, NULL, $4::jsonb)
                    """,
                    [.text(applied.id.uuidString), .text(appliedJSON), .text(conflicting.id.uuidString), .text(conflictJSON)])
                try connection.execute(
                    "INSERT INTO recordkeeper_sync_devices VALUES ('s', 'phone', 1), ('s', 'laptop', 1)")
            }
            #expect(try await PostgresSyncSchema.migrate(connection, upTo: 3) == [2, 3])

            let server = try await PostgresSyncServer(connection: connection)
            let fresh = operation("phone", 2, put("notes", "a", "A2", base: 1))
            let outcomes = try await server.push(space: "s", operations: [applied, conflicting, fresh])
            #expect(outcomes.map(\.isRedelivery) == [true, true, false])
            #expect(outcomes[0].result == .applied(SyncServerVersion(1)))
            #expect(outcomes[1].result == conflict.result)
            #expect(outcomes[2].result == .applied(SyncServerVersion(2)))
            // Schema 2 stores an applied outcome as its version alone, and answers from it.
            let stored = try await connection.transaction { connection in
                try connection.execute(
                    "SELECT outcome IS NULL, version FROM recordkeeper_sync_operations WHERE space = 's' AND operation_id = $1::uuid",
                    [.text(fresh.id.uuidString)])
            }
            #expect(try stored.bool(0, 0))
            #expect(try stored.int64(0, 1) == 2)
            let again = try await server.push(space: "s", operations: [fresh])
            #expect(again == [SyncOutcome(fresh, result: .applied(SyncServerVersion(2)), isRedelivery: true)])
        }
    }

    @Test func `devices recorded under schema 2 get their last operation at 3, so their chains go on`() async throws {
        try await withPrivateSchema { connect, _ in
            let connection = try await connect()
            #expect(try await PostgresSyncSchema.migrate(connection, upTo: 2) == [1, 2])
            // What a schema-2 server stored: two operations of the phone, one of the laptop.
            let phone1 = UUID(), phone2 = UUID(), laptop1 = UUID()
            _ = try await connection.transaction { connection in
                try connection.execute("INSERT INTO recordkeeper_sync_spaces (space, counter) VALUES ('s', 3)")
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_operations (space, operation_id, device, sequence, version, outcome)
                    VALUES ('s', $1::uuid, 'phone', 1, 1, NULL), ('s', $2::uuid, 'phone', 2, 2, NULL),
                           ('s', $3::uuid, 'laptop', 1, 3, NULL)
                    """, [.text(phone1.uuidString), .text(phone2.uuidString), .text(laptop1.uuidString)])
                try connection.execute(
                    "INSERT INTO recordkeeper_sync_devices VALUES ('s', 'phone', 2), ('s', 'laptop', 1)")
            }
            #expect(try await PostgresSyncSchema.migrate(connection, upTo: 3) == [3])
            let last = try await connection.transaction { connection in
                try connection.execute(
                    "SELECT device, last_operation::text FROM recordkeeper_sync_devices WHERE space = 's' ORDER BY device")
            }
            #expect(try last.string(0, 0) == "laptop" && last.string(0, 1) == laptop1.uuidString.lowercased())
            #expect(try last.string(1, 0) == "phone" && last.string(1, 1) == phone2.uuidString.lowercased())

            let server = try await PostgresSyncServer(connection: connection)
            let next = SyncOperation(
                device: "phone", sequence: 3, predecessor: .operation(phone2), changes: [put("notes", "p", "P", base: nil)])
            let fork = SyncOperation(
                device: "laptop", sequence: 2, predecessor: .firstOfDevice, changes: [put("notes", "l", "L", base: nil)])
            let outcomes = try await server.push(space: "s", operations: [next, fork])
            #expect(outcomes.map(\.result) == [.applied(SyncServerVersion(4)), .outOfOrder(lastSequence: 1)])
        }
    }

    @Test func `records stored before schema 5 are pulled by collection after the migration to it`() async throws {
        try await withPrivateSchema { connect, _ in
            let connection = try await connect()
            let previous = PostgresSyncSchema.versions.filter { $0 < 5 }.max()!
            try await PostgresSyncSchema.migrate(connection, upTo: previous)
            // What a server before version 5 stored: 30 changes, one in three of them in "tags".
            _ = try await connection.transaction { connection in
                try connection.execute("INSERT INTO recordkeeper_sync_spaces (space, counter) VALUES ('s', 30)")
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_records
                        (space, collection, key, version, payload, deleted, writer_device, writer_base)
                    SELECT 's', CASE WHEN v % 3 = 0 THEN 'tags' ELSE 'notes' END, 'k' || v, v, '\\x41'::bytea,
                        false, 'phone', NULL
                    FROM generate_series(1, 30) AS v
                    """)
            }
            #expect(try await PostgresSyncSchema.migrate(connection) == PostgresSyncSchema.versions.filter { $0 > previous })
            let index = try await connection.transaction { connection in
                try connection.execute(
                    "SELECT pg_get_indexdef('recordkeeper_sync_records_collection_feed'::regclass)"
                ).string(0, 0)
            }
            #expect(index.contains("(space, collection, version, key)"), "\(index)")

            let server = try await PostgresSyncServer(connection: connection)
            var cursor = SyncCursor.start
            var keys: [String] = []
            while true {
                let page = try await server.pull(space: "s", after: cursor, limit: 4, collections: ["tags"])
                keys += page.changes.map(\.key)
                #expect(page.changes.allSatisfy { $0.collection == "tags" })
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(keys == (1...10).map { "k\($0 * 3)" })
            #expect(cursor == SyncCursor(counter: 30))
        }
    }

    @Test func `a space recorded under schema 5 compacts after the migration to 6 and recognises a re-delivery`() async throws {
        try await withPrivateSchema { connect, _ in
            let connection = try await connect()
            #expect(try await PostgresSyncSchema.migrate(connection, upTo: 5) == [1, 2, 3, 4, 5])
            // A schema-5 server's space: the phone wrote a record, then deleted it; its
            // operations were received at the database's now().
            let write = operation("phone", 1, after: nil, put("notes", "a", "A", base: nil))
            let erase = operation("phone", 2, after: write, delete("notes", "a", base: 1))
            try await connection.transaction { connection in
                try connection.execute("INSERT INTO recordkeeper_sync_spaces (space, counter) VALUES ('s', 2)")
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_records
                        (space, collection, key, version, payload, deleted, writer_device, writer_base)
                    VALUES ('s', 'notes', 'a', 2, NULL, true, 'phone', 1)
                    """)
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_operations (space, operation_id, device, sequence, version, outcome)
                    VALUES ('s', $1::uuid, 'phone', 1, 1, NULL), ('s', $2::uuid, 'phone', 2, 2, NULL)
                    """, [.text(write.id.uuidString), .text(erase.id.uuidString)])
                try connection.execute(
                    "INSERT INTO recordkeeper_sync_devices VALUES ('s', 'phone', 2, $1::uuid)", [.text(erase.id.uuidString)])
            }
            #expect(try await PostgresSyncSchema.migrate(connection) == [6])
            let columns = try await connection.transaction { connection in
                try connection.execute(
                    """
                    SELECT (SELECT horizon FROM recordkeeper_sync_spaces WHERE space = 's'),
                        (SELECT compacted_sequence FROM recordkeeper_sync_devices WHERE space = 's'),
                        (SELECT count(*) FROM recordkeeper_sync_cursors)
                    """)
            }
            #expect(try columns.int64(0, 0) == 0 && columns.int64(0, 1) == 0 && columns.int64(0, 2) == 0)

            // Forty days on, a server compacts the space: its rows from before are older.
            let clock = ManualClock(Date())
            clock.advance(days: 40)
            let server = try await PostgresSyncServer(connections: [connection], hooks: .init(now: clock.now))
            let done = try await server.compact(space: "s", olderThan: .seconds(30 * 86_400))
            #expect(done == SyncCompaction(space: "s", horizon: 2, deletedTombstones: 1, deletedOperations: 2))
            let again = try await server.push(space: "s", operations: [erase])
            #expect(again == [SyncOutcome(erase, result: .compacted([SyncConflict(collection: "notes", key: "a", base: SyncServerVersion(1), server: nil)]), isRedelivery: true)])
            let next = operation("phone", 3, after: erase, put("notes", "a", "again", base: 2))
            #expect(try await server.push(space: "s", operations: [next]).map(\.result) == [.applied(SyncServerVersion(3))])
            let behind = await #expect(throws: SyncError.self) {
                try await server.pull(space: "s", after: SyncCursor(counter: 1), limit: 10)
            }
            #expect(behind?.code == .behindHorizon)
        }
    }

    @Test func `records stored under schema 3 keep their values at 4, with no item version, and new pushes keep theirs`()
        async throws
    {
        try await withPrivateSchema { connect, _ in
            let connection = try await connect()
            #expect(try await PostgresSyncSchema.migrate(connection, upTo: 3) == [1, 2, 3])
            // What a schema-3 server stored: one record of the phone.
            let phone1 = UUID()
            _ = try await connection.transaction { connection in
                try connection.execute("INSERT INTO recordkeeper_sync_spaces (space, counter) VALUES ('s', 1)")
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_operations (space, operation_id, device, sequence, version, outcome)
                    VALUES ('s', $1::uuid, 'phone', 1, 1, NULL)
                    """, [.text(phone1.uuidString)])
                try connection.execute(
                    "INSERT INTO recordkeeper_sync_devices VALUES ('s', 'phone', 1, $1::uuid)", [.text(phone1.uuidString)])
                try connection.execute(
                    """
                    INSERT INTO recordkeeper_sync_records (space, collection, key, version, payload, deleted, writer_device)
                    VALUES ('s', 'books', 'old', 1, 'v1'::bytea, false, 'phone')
                    """)
            }
            #expect(try await PostgresSyncSchema.migrate(connection, upTo: 4) == [4])

            let server = try await PostgresSyncServer(connection: connection)
            var newer = put("books", "new", "v2", base: nil)
            newer.itemVersion = 2
            let next = SyncOperation(device: "phone", sequence: 2, predecessor: .operation(phone1), changes: [newer])
            #expect(try await server.push(space: "s", operations: [next]).map(\.result) == [.applied(SyncServerVersion(2))])
            let page = try await server.pull(space: "s", after: .start, limit: 10)
            #expect(page.changes.map(\.key) == ["old", "new"])
            #expect(page.changes.map(\.itemVersion) == [nil, 2], "a record of schema 3 has none; a new push keeps its own")
            // An older shape over the newer one is a conflict.
            var older = put("books", "new", "v1", base: 2)
            older.itemVersion = 1
            let third = SyncOperation(device: "phone", sequence: 3, predecessor: .operation(next.id), changes: [older])
            let outcome = try await server.push(space: "s", operations: [third])
            #expect(outcome.first?.result.conflicts.first?.server?.itemVersion == 2)
        }
    }

    @Test func `a role granted serving before a step that adds a table is granted that table by the migration`() async throws {
        try await withPrivateSchema { connect, _ in
            let connection = try await connect()
            let role = "rk_serving_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            try await connection.transaction { connection in
                // Role names are identifiers: format('%I') quotes the parameter.
                try connection.execute(
                    """
                    CREATE OR REPLACE FUNCTION pg_temp.rk_role(name text, action text) RETURNS void
                    LANGUAGE plpgsql AS $$
                    BEGIN
                        IF action = 'create' THEN EXECUTE format('CREATE ROLE %I NOLOGIN', name);
                        ELSE EXECUTE format('DROP OWNED BY %I', name); EXECUTE format('DROP ROLE %I', name);
                        END IF;
                    END $$
                    """)
                _ = try connection.execute("SELECT pg_temp.rk_role($1, 'create')", [.text(role)])
            }
            do {
                // What `migrate --grant` gave a role at schema 5, before the cursors' table.
                #expect(try await PostgresSyncSchema.migrate(connection, upTo: 5) == [1, 2, 3, 4, 5])
                try await connection.transaction { connection in
                    try connection.execute(
                        """
                        CREATE OR REPLACE FUNCTION pg_temp.rk_grant_5(role text) RETURNS void LANGUAGE plpgsql AS $$
                        BEGIN
                            EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), role);
                            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON recordkeeper_sync_spaces, '
                                || 'recordkeeper_sync_records, recordkeeper_sync_operations, recordkeeper_sync_devices TO %I', role);
                            EXECUTE format('GRANT SELECT ON recordkeeper_sync_schema TO %I', role);
                        END $$
                        """)
                    _ = try connection.execute("SELECT pg_temp.rk_grant_5($1)", [.text(role)])
                }
                #expect(try await PostgresSyncSchema.servingRoles(connection) == [role])
                #expect(try await PostgresSyncSchema.migrate(connection) == [6])
                let rights = try await connection.transaction { connection in
                    try connection.execute(
                        "SELECT has_table_privilege($1, 'recordkeeper_sync_cursors', 'SELECT, INSERT, UPDATE, DELETE')",
                        [.text(role)]
                    ).bool(0, 0)
                }
                #expect(rights, "the serving role may use the table step 6 added")
            } catch {
                _ = try? await connection.transaction { try $0.execute("SELECT pg_temp.rk_role($1, 'drop')", [.text(role)]) }
                throw error
            }
            try await connection.transaction { _ = try $0.execute("SELECT pg_temp.rk_role($1, 'drop')", [.text(role)]) }
        }
    }

    @Test func `a newer schema is refused and left untouched`() async throws {
        try await withPrivateSchema { connect, name in
            let connection = try await connect()
            try await PostgresSyncSchema.migrate(connection)
            try await connection.transaction { connection in
                _ = try connection.execute(
                    "INSERT INTO recordkeeper_sync_schema (version, name) VALUES ($1, $2)",
                    [.int64(99), .text("from the future")])
            }
            let error = await #expect(throws: SyncError.self) {
                try await PostgresSyncServer(connection: connection)
            }
            #expect(error?.code == .newerServerSchema)
            #expect(error?.message.contains("99") == true)
            #expect(try await PostgresSyncSchema.version(connection) == 99)
            #expect(try await tableCount(connection, schema: name) == 6)
        }
    }
}
