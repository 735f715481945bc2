import CLibPQ
import Foundation

/// An error of the raw PostgreSQL baseline: libpq's or the server's message.
struct RawPostgresError: Error, CustomStringConvertible {
    let operation: String
    let message: String
    var description: String { "PostgreSQL error during \(operation): \(message)" }
}

/// The physical limit of the sync rows (S1/S2): libpq called directly through `CLibPQ` (not
/// `PostgresConnection`), doing the least work that stores and reads the same rows.
///
/// One plain table `recordkeeper_bench_raw (collection, key, payload)` with its primary key,
/// in the bench's own schema. Writes: one `INSERT … SELECT FROM unnest($1::text[], $2::text[],
/// $3::bytea[])` per batch of 1,000 rows inside `BEGIN` … `COMMIT`, the arrays sent in
/// PostgreSQL's binary array format (no escaping, no hex). Reads: keyset pages of 1,000
/// (`WHERE (collection, key) > ($1, $2) ORDER BY collection, key LIMIT 1000`), binary results,
/// decoded into the same Swift values a pull returns.
///
/// Not Sendable: one connection used from one task at a time, synchronously.
final class RawPostgres {
    private let connection: OpaquePointer

    /// A row as both sides hand it over and get it back.
    struct Row {
        var collection: String
        var key: String
        var payload: Data
    }

    init(conninfo: String) throws {
        guard let connection = PQconnectdb(conninfo) else {
            throw RawPostgresError(operation: "connect", message: "libpq is out of memory")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection))
            PQfinish(connection)
            throw RawPostgresError(operation: "connect", message: message)
        }
        self.connection = connection
    }

    deinit {
        PQfinish(connection)
    }

    /// Runs a constant statement without parameters (setup and transaction control).
    func exec(_ sql: StaticString, _ operation: String) throws {
        let result = PQexec(connection, sql.description)
        defer { PQclear(result) }
        try check(result, operation)
    }

    private func check(_ result: OpaquePointer?, _ operation: String) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw RawPostgresError(operation: operation, message: String(cString: PQerrorMessage(connection)))
        }
    }

    /// Creates the table afresh (untimed).
    func reset() throws {
        try exec("SET client_min_messages = warning", "quiet notices")
        try exec("DROP TABLE IF EXISTS recordkeeper_bench_raw", "drop the raw table")
        try exec(
            """
            CREATE TABLE recordkeeper_bench_raw (
                collection text COLLATE "C" NOT NULL,
                key text COLLATE "C" NOT NULL,
                payload bytea NOT NULL,
                PRIMARY KEY (collection, key)
            )
            """, "create the raw table")
    }

    /// Inserts one batch in its own transaction: BEGIN, one INSERT of every row, COMMIT.
    func insert(_ rows: ArraySlice<Row>) throws {
        try exec("BEGIN", "begin")
        let collections = BinaryArray.encode(rows.map { Array($0.collection.utf8) }, elementType: 25)
        let keys = BinaryArray.encode(rows.map { Array($0.key.utf8) }, elementType: 25)
        let payloads = BinaryArray.encode(rows.map { [UInt8]($0.payload) }, elementType: 17)
        let result = try Self.withParameters([collections, keys, payloads], types: [1009, 1009, 1001]) {
            count, types, values, lengths, formats in
            PQexecParams(
                connection,
                """
                INSERT INTO recordkeeper_bench_raw (collection, key, payload)
                SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[])
                """, count, types, values, lengths, formats, 0)
        }
        defer { PQclear(result) }
        try check(result, "insert a batch")
        try exec("COMMIT", "commit")
    }

    /// Reads the page after (`collection`, `key`) (from the start when nil), `limit` rows.
    func page(after position: (collection: String, key: String)?, limit: Int) throws -> [Row] {
        let collection = Array((position?.collection ?? "").utf8)
        let key = Array((position?.key ?? "").utf8)
        var limitBytes = Int64(limit).bigEndian
        let limitParameter = withUnsafeBytes(of: &limitBytes) { Array($0) }
        let result = try Self.withParameters([collection, key, limitParameter], types: [25, 25, 20]) {
            count, types, values, lengths, formats in
            PQexecParams(
                connection,
                """
                SELECT collection, key, payload FROM recordkeeper_bench_raw
                WHERE (collection, key) > ($1, $2)
                ORDER BY collection, key
                LIMIT $3
                """, count, types, values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        try check(result, "read a page")
        let count = Int(PQntuples(result))
        var rows: [Row] = []
        rows.reserveCapacity(count)
        for row in 0..<Int32(count) {
            rows.append(Row(
                collection: Self.string(result, row, 0), key: Self.string(result, row, 1),
                payload: Data(bytes: PQgetvalue(result, row, 2), count: Int(PQgetlength(result, row, 2)))))
        }
        return rows
    }

    private static func string(_ result: OpaquePointer?, _ row: Int32, _ column: Int32) -> String {
        let length = Int(PQgetlength(result, row, column))
        return PQgetvalue(result, row, column).withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// Calls `body` with libpq's parameter arrays for binary-format parameters.
    private static func withParameters(
        _ parameters: [[UInt8]], types: [Oid],
        _ body: (Int32, UnsafePointer<Oid>, UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<Int32>,
                 UnsafePointer<Int32>) -> OpaquePointer?
    ) throws -> OpaquePointer? {
        let buffers = parameters.map { bytes -> UnsafeMutablePointer<CChar> in
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress {
                    UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: bytes.count)
                }
            }
            return buffer
        }
        defer { for buffer in buffers { buffer.deallocate() } }
        let values: [UnsafePointer<CChar>?] = buffers.map { UnsafePointer($0) }
        let lengths = parameters.map { Int32($0.count) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        return body(Int32(parameters.count), types, values, lengths, formats)
    }
}

/// PostgreSQL's binary array format, one dimension: header, then each element's length and
/// bytes (all integers big-endian).
enum BinaryArray {
    static func encode(_ elements: [[UInt8]], elementType: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + $1.count })
        func append(_ value: Int32) {
            withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
        }
        append(1)  // dimensions
        append(0)  // no NULLs
        append(Int32(bitPattern: elementType))
        append(Int32(elements.count))
        append(1)  // lower bound
        for element in elements {
            append(Int32(element.count))
            bytes.append(contentsOf: element)
        }
        return bytes
    }
}
