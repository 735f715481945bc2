import Foundation
import HarnessSupport
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// Sync across process deaths, against a real PostgreSQL (scripts/with-postgres.sh): the helper
/// writes and syncs two device stores in a loop and is killed with SIGKILL at random moments:
/// in local writes, in pushes (before and after the server's commit: the outcome is then unknown
/// and the operation is sent again) and in pulls. Afterwards every device, and a third that
/// joins at the end, syncs to the end: all hold the same records, every write the helper
/// confirmed is there, and the server applied each local transaction exactly once.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct SyncCrashTests {

    /// Kills per run: 20 by default (RECORDKEEPER_SYNC_KILLS=n to change), 200 in long mode.
    static let kills = Int(environmentInteger("RECORDKEEPER_SYNC_KILLS") ?? (isLongMode ? 200 : 20))

    @Test func `devices killed while syncing converge with every confirmed write, each applied once`() async throws {
        let conninfo = try TestPostgres.requireConninfo()
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        let seed = environmentInteger("RECORDKEEPER_CRASH_SEED") ?? 20_261_130
        var timing = SplitMix64(seed: seed)
        let space = "sync-crash-\(UUID().uuidString)"
        try await withTemporaryDirectory { directory in
            let stores = ["a", "b"].map { directory.appendingPathComponent("device-\($0).sqlite") }
            let connection = try await PostgresConnection(conninfo: conninfo)
            var confirmed: [String] = []
            var answersLost = 0
            var killed = 0
            var runs = 0
            // Runs until enough were killed mid-way (bounded at 3× the kills): the two devices
            // take turns, so each one's next run meets the other's changes on the server.
            while killed < Self.kills, runs < Self.kills * 3 {
                let run = runs
                runs += 1
                let child = try ChildProcess(
                    executable: helper,
                    arguments: [
                        "sync", "--store", stores[run % 2].path, "--server", conninfo, "--space", space,
                        "--run", "r\(run)", "--count", "400", "--answer-delay-ms", "5",
                    ],
                    in: directory)
                try child.start()
                try await child.waitForOutput()
                // Killed 0–80 ms after it connected: far before its 400 writes and 200 syncs.
                try await Task.sleep(for: .milliseconds(timing.below(80)))
                child.kill()
                await child.waitForExit()
                let lines = try child.output().split(separator: "\n").map(String.init)
                let errors = try child.errorOutput()
                try child.removeFiles()
                if child.process.terminationReason == .uncaughtSignal {
                    killed += 1
                    answersLost += try await Self.appliedButPending(
                        store: stores[run % 2], parity: run % 2, space: space, connection: connection)
                } else {
                    #expect(lines.last == "done", "the helper failed: \(lines.suffix(2)) \(errors)")
                }
                confirmed += lines.filter { $0.hasPrefix("wrote ") }.map { String($0.dropFirst(6)) }
            }
            #expect(killed >= min(10, Self.kills), "only \(killed) of \(runs) runs were killed before they finished")

            // Every device syncs to the end; a third joins and pulls everything.
            let server = try await PostgresSyncServer.connect(conninfo)
            let joiner = directory.appendingPathComponent("device-c.sqlite")
            var contents: [[String: Data]] = []
            for url in stores + [joiner] {
                let store = RecordStore(url: url)
                #expect(try await store.integrityCheck() == ["ok"])
                let sync = RecordSync(store: store, server: server)
                if try await store.syncStatus() == nil {
                    try await sync.start(space: space, collections: ["crash"])
                }
                _ = try await sync.sync()
                contents.append(try await store.read("crash") ?? [:])
                await store.close()
            }
            // The first devices pull what the later ones pushed.
            for url in stores {
                let store = RecordStore(url: url)
                let report = try await RecordSync(store: store, server: server).sync()
                #expect(report.newConflicts.isEmpty)
                #expect(try await store.syncStatus()?.pendingOperations == 0)
                #expect(try await store.syncConflicts().isEmpty)
                contents[stores.firstIndex(of: url)!] = try await store.read("crash") ?? [:]
                await store.close()
            }
            #expect(contents[0] == contents[1] && contents[1] == contents[2], "the devices did not converge")
            let keys = Set(contents[2].keys)
            // A confirmed "R-i" with i % 3 == 2 was written together with "R-i-b".
            let expectedKeys = confirmed + confirmed.filter { Int($0.split(separator: "-").last!)! % 3 == 2 }.map { $0 + "-b" }
            let lost = Set(expectedKeys).subtracting(keys)
            #expect(lost.isEmpty, "confirmed writes missing after sync: \(lost.sorted().prefix(5))")
            let wrong = contents[2].filter { key, value in
                let base = key.hasSuffix("-b") ? String(key.dropLast(2)) : key
                return !String(decoding: value, as: UTF8.self).hasPrefix("\(base) from process ")
            }
            #expect(wrong.isEmpty, "records with a value another write gave: \(wrong.keys.sorted().prefix(5))")

            // Each local transaction wrote one "R-i" record (and maybe its "R-i-b"), so the
            // records say how many transactions committed; the server applied exactly that many
            // operations, each with its own counter value: none was applied twice (a
            // re-delivered one is answered from the log), none is missing.
            let transactions = keys.filter { !$0.hasSuffix("-b") }.count
            let counts = try await connection.transaction(readOnly: true) { connection in
                try connection.execute(
                    """
                    SELECT (SELECT count(*) FROM recordkeeper_sync_operations WHERE space = $1 AND version IS NOT NULL),
                           (SELECT count(DISTINCT version) FROM recordkeeper_sync_operations WHERE space = $1),
                           (SELECT counter FROM recordkeeper_sync_spaces WHERE space = $1)
                    """, [.text(space)])
            }
            let applied = try counts.int64(0, 0)
            #expect(applied == Int64(transactions), "operations applied on the server vs local transactions")
            #expect(try counts.int64(0, 1) == applied)
            #expect(try counts.int64(0, 2) == applied, "the space's counter moved once per applied operation")
            reportFigure(
                "sync crash: \(killed) kills in \(runs) runs (leaving \(answersLost) operations applied on the server "
                    + "but not yet answered on the device), \(confirmed.count) "
                    + "confirmed writes, \(transactions) local transactions, \(applied) operations applied once each, "
                    + "3 devices converged on \(keys.count) records, 0 lost")
        }
    }
}

extension SyncCrashTests {
    /// How many of a killed device's pending operations the server had applied already (the
    /// kill came between the server's commit and the device's record of the answer): the
    /// server's applied operations of the device, less those the device knows were answered
    /// (its local transactions, one per "R-i" record of its runs, less those still pending).
    static func appliedButPending(
        store url: URL, parity: Int, space: String, connection: PostgresConnection
    ) async throws -> Int {
        let store = RecordStore(url: url)
        let status = try await store.syncStatus()
        let records = try await store.read("crash") ?? [:]
        await store.close()
        guard let status else { return 0 }  // killed before sync started
        let own = records.keys.filter { key in
            !key.hasSuffix("-b") && Int(key.split(separator: "-")[0].dropFirst()).map { $0 % 2 == parity } == true
        }
        let device = status.device
        let applied = try await connection.transaction(readOnly: true) { connection in
            try connection.execute(
                """
                SELECT count(*) FROM recordkeeper_sync_operations
                WHERE space = $1 AND device = $2 AND version IS NOT NULL
                """, [.text(space), .text(device)]
            ).int64(0, 0)
        }
        let answered = own.count - status.pendingOperations
        let result = Int(applied) - answered
        #expect((0...status.pendingOperations).contains(result),
                "the server applied \(applied) of the device's operations; it has \(own.count) transactions, \(status.pendingOperations) pending")
        return result
    }
}
