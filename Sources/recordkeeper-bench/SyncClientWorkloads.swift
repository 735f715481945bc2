import Foundation
import HarnessSupport
import RecordKeeper
import RecordKeeperPostgres

/// S3/S4: the same N records as S1/S2, but through the device: `RecordSync` over a local store
/// and `PostgresSyncServer`, against raw libpq storing and reading the rows in batches of
/// 1,000 in the same run (see docs/PERFORMANCE.md).
///
/// Every repeat starts from a fresh bench schema (fresh server tables, untimed) and fresh
/// store files. **S3**: a store holding the N records (written untimed, before sync starts);
/// timed: `start(space:collections:)` (registration and capture of the N records as operations
/// of 1,000) plus `push()` to the end; the two parts are reported as rows of their own. **S4**:
/// a second, empty store (a fresh device) started on the same space (untimed); timed: `pull()`
/// to the server's head, which writes the N records into its store. The raw side: one
/// `INSERT … unnest` per batch of 1,000 in its own transaction, then keyset pages of 1,000.
extension BenchRunner {
    func runSyncClient(conninfo: String) async throws {
        let n = options.n
        let rows = try SyncBenchData.rows(n: n)
        let values = try payloads(n: n)
        let raw = try RawPostgres(conninfo: conninfo)
        log("S3/S4 sync through RecordSync, N=\(n)")

        var samples: [String: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in order(forRepeat: repeatIndex) {
                switch implementation {
                case .raw:
                    let (push, pull) = try rawSyncBaseline(raw, rows: rows)
                    samples["raw push", default: []].append(push)
                    samples["raw pull", default: []].append(pull)
                    // The device's floor: the same pages, each written into a raw SQLite
                    // table in one transaction.
                    let floorURL = storeURL(.raw, purpose: "sync-pull", n: n)
                    removeStore(floorURL)
                    let device = try RawSQLiteStore(path: floorURL.path, durability: options.durability)
                    var written = 0
                    let floor = try measure {
                        var position: (collection: String, key: String)?
                        while true {
                            let page = try raw.page(after: position, limit: 1_000)
                            try device.upsertPage(page)
                            written += page.count
                            guard let last = page.last, page.count == 1_000 else { break }
                            position = (last.collection, last.key)
                        }
                    }
                    guard try device.count() == n, written == n else {
                        throw BenchFailure("the raw device floor wrote \(written) rows, not \(n)")
                    }
                    removeStore(floorURL)
                    samples["raw pull+write", default: []].append(floor)
                case .recordKeeper:
                    try freshSchema(raw)
                    let space = "bench"
                    // S3: a device holding N records starts syncing and uploads them.
                    let uploaderURL = storeURL(.recordKeeper, purpose: "sync-upload", n: n)
                    removeStore(uploaderURL)
                    let uploader = try await RecordKeeperSide.open(url: uploaderURL, durability: options.durability)
                    try await uploader.replace(benchCollection, values: values)
                    let uploadServer = TimedSyncServer(try await syncServer(conninfo: conninfo))
                    let uploadSync = RecordSync(store: uploader, server: uploadServer)
                    let start = try await measureAsync {
                        try await uploadSync.start(space: space, collections: [benchCollection])
                    }
                    var pushReport = SyncReport()
                    let push = try await measureAsync {
                        pushReport = try await uploadSync.push()
                    }
                    let pending = try await uploader.syncStatus()?.pendingOperations
                    guard pushReport.pushedChanges == n, pending == 0 else {
                        throw BenchFailure(
                            "S3 pushed \(pushReport.pushedChanges) changes, not \(n); \(pending.map(String.init) ?? "no") operations pending")
                    }
                    samples["rk start", default: []].append(start)
                    samples["rk push", default: []].append(push)
                    samples["rk push server", default: []].append(uploadServer.seconds)
                    samples["rk push client", default: []].append(push - uploadServer.seconds)
                    samples["rk start+push", default: []].append(start + push)
                    await uploader.close()
                    removeStore(uploaderURL)

                    // S4: a fresh device of the same space pulls them into its store.
                    let pullerURL = storeURL(.recordKeeper, purpose: "sync-pull", n: n)
                    removeStore(pullerURL)
                    let puller = try await RecordKeeperSide.open(url: pullerURL, durability: options.durability)
                    let pullServer = TimedSyncServer(try await syncServer(conninfo: conninfo))
                    let pullSync = RecordSync(store: puller, server: pullServer)
                    try await pullSync.start(space: space, collections: [benchCollection])
                    var pullReport = SyncReport()
                    let pullServerBefore = pullServer.seconds
                    let pull = try await measureAsync {
                        pullReport = try await pullSync.pull()
                    }
                    let count = try await puller.read(benchCollection)?.count ?? 0
                    guard pullReport.pulledChanges == n, count == n else {
                        throw BenchFailure("S4 pulled \(pullReport.pulledChanges) changes into a store of \(count), not \(n)")
                    }
                    samples["rk pull", default: []].append(pull)
                    let pullServerTime = pullServer.seconds - pullServerBefore
                    samples["rk pull server", default: []].append(pullServerTime)
                    samples["rk pull client", default: []].append(pull - pullServerTime)
                    await puller.close()
                    removeStore(pullerURL)
                case .naive:
                    continue
                }
            }
        }
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
        let parts: [(variant: String, sample: String, note: String)] = [
            ("start+push", "rk start+push", "start(space:collections:) capturing N records, then push() to the end"),
            ("start (capture) part", "rk start", "the start part alone (ratio to the whole raw push)"),
            ("push part", "rk push", "the push part alone (ratio to the whole raw push)"),
            ("push: in server calls", "rk push server", "of the push part, the time inside PostgresSyncServer.push"),
            ("push: client", "rk push client", "of the push part, the time outside server calls (local reads, outcomes)"),
        ]
        for part in parts {
            record("S3", variant: part.variant, n: n, .raw, metric: "time_s", samples: samples["raw push"] ?? [],
                   note: "one insert from unnest of binary arrays per batch of 1,000, a transaction each")
            record("S3", variant: part.variant, n: n, .recordKeeper, metric: "time_s",
                   samples: samples[part.sample] ?? [], note: part.note)
        }
        record("S4", variant: "fresh device", n: n, .raw, metric: "time_s", samples: samples["raw pull"] ?? [],
               note: "keyset pages of 1,000, one query each")
        record("S4", variant: "fresh device", n: n, .recordKeeper, metric: "time_s", samples: samples["rk pull"] ?? [],
               note: "pull() to the head: pages of 1,000 written into the store")
        record("S4", variant: "vs raw pull + raw SQLite write", n: n, .raw, metric: "time_s",
               samples: samples["raw pull+write"] ?? [],
               note: "the device floor: the same keyset pages, each upserted into a raw SQLite table in one transaction")
        record("S4", variant: "vs raw pull + raw SQLite write", n: n, .recordKeeper, metric: "time_s",
               samples: samples["rk pull"] ?? [], note: "the same pull() against that floor")
        for part in [("pull: in server calls", "rk pull server", "of the pull, the time inside PostgresSyncServer.pull"),
                     ("pull: client", "rk pull client", "of the pull, the time outside server calls (applying pages)")] {
            record("S4", variant: part.0, n: n, .raw, metric: "time_s", samples: samples["raw pull"] ?? [])
            record("S4", variant: part.0, n: n, .recordKeeper, metric: "time_s", samples: samples[part.1] ?? [], note: part.2)
        }
    }
}

/// A server that times the calls it passes on, so a row can tell the server's part of a
/// `RecordSync` pass from the client's (the time outside these calls).
final class TimedSyncServer: RecordSyncServer, SyncPagesPulling {
    let server: PostgresSyncServer
    /// Seconds spent inside push and pull calls. A lock because the protocol is Sendable;
    /// the bench calls one at a time.
    private let spent = Locked<Double>(0)

    init(_ server: PostgresSyncServer) {
        self.server = server
    }

    var seconds: Double { spent.withLock { $0 } }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        var outcomes: [SyncOutcome] = []
        let time = try await measureAsync { outcomes = try await server.push(space: space, operations: operations) }
        spent.withLock { $0 += time }
        return outcomes
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        var page: SyncPage?
        let time = try await measureAsync {
            page = try await server.pull(space: space, after: cursor, limit: limit, collections: collections)
        }
        spent.withLock { $0 += time }
        guard let page else { throw BenchFailure("the timed pull returned no page") }
        return page
    }

    /// The relay fills an answer of several pages with one read (S6 through the relay).
    func pullPages(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, pages: Int
    ) async throws -> [SyncPage] {
        var read: [SyncPage] = []
        let time = try await measureAsync {
            read = try await server.pullPages(space: space, after: cursor, limit: limit, collections: collections, pages: pages)
        }
        spent.withLock { $0 += time }
        return read
    }
}
