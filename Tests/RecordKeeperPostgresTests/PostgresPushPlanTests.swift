import Foundation
import RecordKeeper
@testable import RecordKeeperPostgres
import TestHelpers
import Testing

/// A push looks its records up by the primary key whatever the statistics say: a new space
/// (estimated empty: the last ANALYZE never saw it) on a server holding 600,000 rows of other
/// spaces once made PostgreSQL walk the feed index over the whole space for every record.
/// The test reads the plan of the push's read; the speed is measured by recordkeeper-bench (S5).
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(5)))
struct PostgresPushPlanTests {
    @Test func `a push into a new space looks its records up by primary key on a server holding other spaces`()
        async throws
    {
        try await TestPostgres.withPrivateConnections { connect, _ in
            let connection = try await connect()
            let server = try await PostgresSyncServer(connection: connection)
            try await connection.execute(
                """
                INSERT INTO recordkeeper_sync_records
                    (space, collection, key, version, payload, deleted, writer_device, writer_base)
                SELECT 'other-' || (g % 6), 'notes', 'k' || lpad(g::text, 8, '0'), g, '\\x78'::bytea, false, 'd', NULL
                FROM generate_series(1, 600000) AS g
                """)
            try await connection.execute("ANALYZE recordkeeper_sync_records")

            // The new space fills batch after batch, with no ANALYZE in between.
            func batch(_ number: Int) -> [SyncOperation] {
                (0..<10).map { op in
                    SyncOperation(
                        device: "uploader", sequence: Int64(number * 10 + op + 1),
                        changes: (0..<100).map { n in
                            put("notes", "k" + String(format: "%08d", number * 1000 + op * 100 + n), "v", base: nil)
                        })
                }
            }
            for number in 0..<2 {
                let outcomes = try await server.push(space: "new", operations: batch(number))
                #expect(outcomes.allSatisfy { $0.result.appliedVersion != nil })
            }
            let plan = try await PostgresSyncServer.planOfRead(space: "new", operations: batch(2), on: connection)
            #expect(plan.contains("recordkeeper_sync_records_pkey"), "\(plan)")
            #expect(!plan.contains("recordkeeper_sync_records_feed"), "\(plan)")
            let outcomes = try await server.push(space: "new", operations: batch(2))
            #expect(outcomes.allSatisfy { $0.result.appliedVersion != nil })
        }
    }

    @Test func `a pull of one collection reads its own feed index, and of every collection the feed index, before and after ANALYZE`() async throws {
        try await TestPostgres.withPrivateConnections { connect, _ in
            let connection = try await connect()
            _ = try await PostgresSyncServer(connection: connection)
            // 200,000 changes of one space, one in ten of them in "tags".
            try await connection.execute(
                """
                INSERT INTO recordkeeper_sync_records
                    (space, collection, key, version, payload, deleted, writer_device, writer_base)
                SELECT 's', CASE WHEN g % 10 = 0 THEN 'tags' ELSE 'notes' END, 'k' || g, g, '\\x78'::bytea, false,
                    'd', NULL
                FROM generate_series(1, 200000) AS g
                """)
            for analyzed in [false, true] {
                if analyzed { try await connection.execute("ANALYZE recordkeeper_sync_records") }
                for after: Int64 in [0, 150_000] {
                    let plan = try await PostgresSyncServer.planOfPull(
                        space: "s", after: after, collections: ["tags"], on: connection)
                    #expect(plan.contains("recordkeeper_sync_records_collection_feed"), "\(plan)")
                    #expect(!plan.contains("Seq Scan"), "\(plan)")
                    // The merge keeps the page's rows only (a top-N sort under the LIMIT); the
                    // running sum of the payload budget comes after it, never before.
                    let window = try #require(plan.range(of: "WindowAgg"), "\(plan)")
                    let limit = try #require(plan.range(of: "Limit"), "\(plan)")
                    #expect(window.lowerBound < limit.lowerBound, "\(plan)")
                    // Every collection: the feed index in its order, no sort at all.
                    let all = try await PostgresSyncServer.planOfPull(
                        space: "s", after: after, collections: nil, on: connection)
                    #expect(all.contains("recordkeeper_sync_records_feed"), "\(all)")
                    #expect(!all.contains("Sort") && !all.contains("Seq Scan"), "\(all)")
                }
            }
        }
    }
}
