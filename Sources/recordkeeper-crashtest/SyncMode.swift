import Foundation
import RecordKeeper
import RecordKeeperPostgres

/// The sync mode of the helper, for the SIGKILL test of sync.
///
///     recordkeeper-crashtest sync --store PATH --server CONNINFO --space S --run R [--count N]
///             [--answer-delay-ms D]
///         Starts syncing collection "crash" with space S (when the store does not sync yet),
///         then N times (default: until killed): writes record "R-i" (every third time with a
///         second record "R-i-b" in the same transaction) and prints "wrote R-i" once the
///         commit is confirmed; after every second write it syncs (push, then pull to the head)
///         and prints "synced". At the end it prints "done". Kills land in writes, in pushes
///         (before or after the server's commit) and in pulls. With D, each push's answer
///         reaches the client 0–D ms after the server committed (a slow network), so kills
///         often land between the server's commit and the device's record of it.
enum SyncMode {
    static let collection = "crash"

    static func run(store: RecordStore, options: [String: String]) async throws {
        guard let conninfo = options["server"], let space = options["space"], let run = options["run"] else {
            fail("sync needs --server CONNINFO --space S --run R")
        }
        let count = options["count"].flatMap(Int.init) ?? Int.max
        let postgres = try await PostgresSyncServer.connect(conninfo)
        let delay = options["answer-delay-ms"].flatMap(Int.init) ?? 0
        let server: any RecordSyncServer = delay > 0 ? SlowAnswers(base: postgres, maximumDelay: delay) : postgres
        let sync = RecordSync(store: store, server: server)
        if try await store.syncStatus() == nil {
            try await sync.start(space: space, collections: [collection])
        }
        say("started")
        var number = 0
        while number < count {
            let key = "\(run)-\(number)"
            let payload = Data("\(key) from process \(getpid())".utf8)
            if number % 3 == 2 {
                try await store.apply(collection, changes: RecordChanges(upserts: [key: payload, key + "-b": payload]))
            } else {
                try await store.put(collection, key: key, data: payload)
            }
            say("wrote \(key)")
            if number % 2 == 1 {
                _ = try await sync.sync()
                say("synced")
            }
            number += 1
        }
        _ = try await sync.sync()
        say("done")
    }
}

/// A server whose push answers arrive late: the server has committed, the device does not
/// know yet.
struct SlowAnswers: RecordSyncServer {
    let base: any RecordSyncServer
    let maximumDelay: Int

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        let outcomes = try await base.push(space: space, operations: operations)
        try await Task.sleep(for: .milliseconds(Int.random(in: 0...maximumDelay)))
        return outcomes
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await base.pull(space: space, after: cursor, limit: limit)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        try await base.pull(space: space, after: cursor, limit: limit, collections: collections)
    }
}
