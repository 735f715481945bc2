import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// The change log trimmed by the writers themselves (docs/FORMAT.md "Trimming"): ordinary
/// writes through two connections, with a stream observing, each transaction checked against
/// the rule. (`ChangeLogTests` checks the bound alone.)
@Suite struct ChangeLogTrimmingTests {
    /// The oldest and newest seq and the row count of the log, read through a connection of its own.
    private func bounds(_ url: URL) throws -> (first: Int64, last: Int64, count: Int64) {
        let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
        return try connection.withStatement("SELECT min(seq), max(seq), count(*) FROM change_log") { statement in
            _ = try statement.step()
            return (statement.int64(at: 0), statement.int64(at: 1), statement.int64(at: 2))
        }
    }

    @Test func `writers trim the log when they cross a multiple of 8192, keeping the newest 100000 rows`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let one = RecordStore(url: url, options: .init(durability: .normal))
            let other = RecordStore(url: url, options: .init(durability: .normal))  // another connection
            try await one.put("c", key: "k0", data: Data("created"))
            // Writers log only while a stream observes (one taken once the store exists holds
            // the observers' lock from the start).
            let observer = RecordStore(url: url)
            let stream = await observer.changes(in: "c")
            let keys = (0..<8_000).map { "k\($0)" }
            let retained = ChangeLog.retainedEntries, interval = ChangeLog.trimInterval

            var (first, last): (Int64, Int64) = (0, 0)
            var trims = 0
            var round = 0
            // Past the retained rows and three trimming points more (about 20 rounds; the bound
            // only stops a log that does not grow).
            while last < retained + 3 * interval, round < 100 {
                let payload = Data("round \(round)")
                let logged: Int64
                switch round % 4 {
                case 0:
                    try await one.apply("c", changes: RecordChanges(upserts: Dictionary(uniqueKeysWithValues: keys.map { ($0, payload) })))
                    logged = 8_000
                case 1:
                    try await other.replace("c", values: Dictionary(uniqueKeysWithValues: keys.map { ($0, payload) }))
                    logged = 8_000
                case 2:
                    try await one.write { tx in
                        for key in keys.prefix(4_000) { try tx.put("c", key: key, data: payload) }
                        for key in keys.prefix(4_000) { try tx.put("d", key: key, data: payload) }
                    }
                    logged = 8_000
                default:
                    try await other.removeCollection("d")
                    logged = 4_000
                }
                let now = try bounds(url)
                let written = (last + 1)...(last + logged)
                #expect(now.last == written.upperBound, "round \(round): every changed record is one row")
                #expect(now.count == now.last - now.first + 1, "round \(round): the seqs present are contiguous")
                if let bound = ChangeLog.trimBound(first: written.lowerBound, last: written.upperBound) {
                    #expect(bound == now.last - retained)
                    #expect(now.first == now.last - retained + 1, "round \(round) crossed a trimming point: the newest \(retained) rows stay")
                    trims += 1
                } else if first > 0 {
                    #expect(now.first == first, "round \(round) trimmed without crossing a trimming point")
                }
                #expect(now.count <= retained + interval, "round \(round): the log outgrew its bound")
                (first, last) = (now.first, now.last)
                round += 1
            }
            #expect(last >= retained + 3 * interval, "the log did not grow past its bound")
            #expect(trims >= 3)
            #expect(first > 1, "rows were trimmed")
            withExtendedLifetime(stream) {}
        }
    }
}
