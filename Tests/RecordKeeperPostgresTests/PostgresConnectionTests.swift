import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// The libpq connection: parameters travel apart from the SQL, results decode by type, errors
/// keep the SQLSTATE and the server's message, transactions roll back on a throw.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
struct PostgresConnectionTests {
    @Test func `parameters travel apart from the SQL, whatever they contain`() async throws {
        let connection = try await TestPostgres.connection()
        let hostile = "O'Brien\"; DROP TABLE pg_class; -- \\ $1"
        let bytes = Data([0, 1, 2, 0xFF, 0x5C, 0x22])
        let row = try await connection.transaction { connection in
            let result = try connection.execute(
                "SELECT $1::text, $2::bigint, $3::boolean, $4::bytea, $5::text IS NULL",
                [.text(hostile), .int64(-9_000_000_000), .bool(true), .bytes(bytes), .null])
            return (
                try result.string(0, 0), try result.int64(0, 1), try result.bool(0, 2),
                try result.data(0, 3), try result.bool(0, 4)
            )
        }
        #expect(row.0 == hostile)
        #expect(row.1 == -9_000_000_000)
        #expect(row.2)
        #expect(row.3 == bytes)
        #expect(row.4)
    }

    @Test func `text arrays keep quotes, backslashes, the word NULL and real NULLs apart`() async throws {
        let connection = try await TestPostgres.connection()
        let elements: [String?] = ["a\"b", "c\\d", "NULL", nil, "", "{x,y}", "é ü 😀"]
        let decoded = try await connection.transaction { connection in
            let result = try connection.execute(
                "SELECT e FROM unnest($1::text[]) WITH ORDINALITY AS t(e, n) ORDER BY n",
                [.textArray(elements)])
            return try (0..<result.rowCount).map { row throws(PostgresError) in try result.optionalString(row, 0) }
        }
        #expect(decoded == elements)
    }

    @Test func `binary arrays carry any bytes, NULLs, negative integers, uuids and booleans, and may be empty`()
        async throws
    {
        let connection = try await TestPostgres.connection()
        let blobs: [Data?] = [Data([0, 0xFF, 0x5C, 0x22, 0x7B, 0x2C]), nil, Data(), Data("é".utf8)]
        let numbers: [Int64?] = [Int64.min, -1, nil, 0, Int64.max]
        let uuids = [UUID(), UUID()]
        let rows = try await connection.transaction { connection in
            let result = try connection.execute(
                """
                SELECT b, i, u, f, cardinality($5::bigint[]) FROM unnest($1::bytea[], $2::bigint[], $3::uuid[], $4::boolean[])
                    WITH ORDINALITY AS t(b, i, u, f, n) ORDER BY n
                """,
                [.byteaArray(blobs), .int64Array(numbers), .uuidArray(uuids), .boolArray([true, false, true]), .int64Array([])],
                resultFormat: .binary)
            return try (0..<result.rowCount).map { row throws(PostgresError) in
                (
                    result.isNull(row, 0) ? nil : try result.data(row, 0), try result.optionalInt64(row, 1),
                    result.isNull(row, 2) ? nil : try result.uuid(row, 2),
                    result.isNull(row, 3) ? nil : try result.bool(row, 3), try result.int64(row, 4)
                )
            }
        }
        #expect(rows.count == 5)
        #expect(rows.map(\.0) == blobs + [nil])
        #expect(rows.map(\.1) == numbers)
        #expect(rows.map(\.2) == uuids + [nil, nil, nil])
        #expect(rows.map(\.3) == [true, false, true, nil, nil])
        #expect(rows.allSatisfy { $0.4 == 0 })
    }

    @Test func `binary results decode every integer width, booleans, bytea and uuids`() async throws {
        let connection = try await TestPostgres.connection()
        let uuid = UUID()
        let values = try await connection.transaction { connection in
            let result = try connection.execute(
                "SELECT (-5)::int2, (-70000)::int4, (-1)::int8, false, '\\x00ff'::bytea, $1::uuid, 'ü'::text",
                [.text(uuid.uuidString)], resultFormat: .binary)
            return (
                try result.int64(0, 0), try result.int64(0, 1), try result.int64(0, 2),
                try result.bool(0, 3), try result.data(0, 4), try result.uuid(0, 5), try result.string(0, 6)
            )
        }
        #expect(values.0 == -5)
        #expect(values.1 == -70000)
        #expect(values.2 == -1)
        #expect(!values.3)
        #expect(values.4 == Data([0, 0xFF]))
        #expect(values.5 == uuid)
        #expect(values.6 == "ü")
    }

    @Test func `a failed statement keeps the SQLSTATE and the server's message`() async throws {
        let connection = try await TestPostgres.connection()
        let error = await #expect(throws: PostgresError.self) {
            try await connection.transaction(operation: "divide") { connection in
                _ = try connection.execute("SELECT 1 / $1::integer", [.int64(0)], operation: "divide by zero")
            }
        }
        #expect(error?.kind == .statement)
        #expect(error?.sqlState == "22012")
        #expect(error?.message == "division by zero")
        #expect(error?.operation == "divide by zero")
        #expect(error?.isConnectionFailure == false)

        // A unique violation, with the server's detail; the connection stays usable.
        let duplicate = await #expect(throws: PostgresError.self) {
            try await connection.transaction { connection in
                try connection.execute("CREATE TEMP TABLE IF NOT EXISTS t (k text PRIMARY KEY)")
                _ = try connection.execute("INSERT INTO t VALUES ($1), ($1)", [.text("same")])
            }
        }
        #expect(duplicate?.sqlState == "23505")
        #expect(duplicate?.detail?.contains("same") == true)
        let one = try await connection.transaction { connection in
            try connection.execute("SELECT 1").int64(0, 0)
        }
        #expect(one == 1)
    }

    @Test func `a transaction whose body throws is rolled back`() async throws {
        let connection = try await TestPostgres.connection()
        struct Stop: Error {}
        try await connection.transaction { connection in
            _ = try connection.execute("CREATE TEMP TABLE kept (k text)")
        }
        await #expect(throws: Stop.self) {
            try await connection.transaction { connection in
                try connection.execute("INSERT INTO kept VALUES ($1)", [.text("gone")])
                throw Stop()
            }
        }
        let count = try await connection.transaction { connection in
            try connection.execute("SELECT count(*) FROM kept").int64(0, 0)
        }
        #expect(count == 0)
    }

    @Test func `names keep their characters whatever client encoding the session would default to`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "encoding") { conninfo, schema in
            // A session whose client encoding defaults to LATIN1 (as a role's or database's
            // setting, or PGCLIENTENCODING, would make it) against one in UTF-8.
            let latin1 = "\(try TestPostgres.requireConninfo()) options='-c search_path=\(schema) -c client_encoding=LATIN1'"
            let connection = try await PostgresConnection(conninfo: latin1)
            #expect(try await connection.transaction { try $0.execute("SHOW client_encoding").string(0, 0) } == "UTF8")
            let writer = try await PostgresSyncServer.connect(latin1)
            let reader = try await PostgresSyncServer.connect(conninfo)
            let space = TestPostgres.space("café_€")
            _ = try await writer.push(space: space, operations: [
                SyncOperation(device: "d", sequence: 1, changes: [
                    SyncChange(collection: "notas_ñ", key: "über", value: .payload(Data("1".utf8)), base: nil)
                ]),
            ])
            let page = try await reader.pull(space: space, after: .start, limit: 10, collections: nil)
            #expect(page.changes.map { "\($0.collection)/\($0.key)" } == ["notas_ñ/über"])
        }
    }

    @Test func `a connection string may set no client encoding but UTF-8`() async throws {
        let error = await #expect(throws: PostgresError.self) {
            _ = try await PostgresConnection(conninfo: "\(try TestPostgres.requireConninfo()) client_encoding=LATIN1")
        }
        #expect(error?.kind == .configuration)
        for name in ["utf8", "'UTF-8 '", "utf_8", "Unicode"] {
            _ = try await PostgresConnection(conninfo: "\(try TestPostgres.requireConninfo()) client_encoding=\(name)")
        }
        for name in ["auto", "SQL_ASCII"] {
            await #expect(throws: PostgresError.self, "\(name)") {
                _ = try await PostgresConnection(conninfo: "\(try TestPostgres.requireConninfo()) client_encoding=\(name)")
            }
        }
    }

    @Test(.disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
    func `cancelling a statement from another task ends it, and a cancel after it ended reaches nothing`() async throws {
        let connection = try await TestPostgres.connection()
        let monitor = try await TestPostgres.connection()
        let pid = await connection.backendProcessID  // before: the statement holds the connection's queue
        let sleeping = Task {
            try await connection.withTimeout(.seconds(120)) { try $0.execute("SELECT pg_sleep(60)") }
        }
        try await waitUntil("the statement runs") {
            try await monitor.transaction {
                try $0.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%' AND state = 'active'",
                               [.int64(Int64(pid))]).int64(0, 0)
            } == 1
        }
        connection.cancelRunningStatement()
        let error = await #expect(throws: PostgresError.self) { try await sleeping.value }
        #expect(error?.kind == .cancelled)
        // Nothing runs now: a late cancel is not kept for the next statement.
        connection.cancelRunningStatement()
        #expect(try await connection.transaction { try $0.execute("SELECT 1").int64(0, 0) } == 1)
    }

    @Test func `a string with a NUL character is refused before anything is sent`() async throws {
        let connection = try await TestPostgres.connection()
        let before = await connection.statementCount
        let error = await #expect(throws: PostgresError.self) {
            try await connection.execute("SELECT $1::text", [.text("a\u{0}b")])
        }
        #expect(error?.kind == .invalidArgument)
        let arrayError = await #expect(throws: PostgresError.self) {
            try await connection.execute("SELECT $1::text[]", [.textArray(["ok", "a\u{0}b"])])
        }
        #expect(arrayError?.kind == .invalidArgument)
        #expect(await connection.statementCount == before)
    }
}
