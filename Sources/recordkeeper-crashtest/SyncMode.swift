import Foundation
import RecordKeeper
import RecordKeeperPostgres

/// The sync mode of the helper, for the SIGKILL test of sync.
///
///     recordkeeper-crashtest sync --store PATH --server CONNINFO --space S --run R [--count N]
///         Starts syncing collection "crash" with space S (when the store does not sync yet),
///         then N times (default: until killed): writes record "R-i" (every third time with a
///         second record "R-i-b" in the same transaction) and prints "wrote R-i" once the
///         commit is confirmed; after every second write it syncs (push, then pull to the head)
///         and prints "synced". At the end it prints "done". Kills land in writes, in pushes
///         (before or after the server's commit) and in pulls.
enum SyncMode {
    static let collection = "crash"

    static func run(store: RecordStore, options: [String: String]) async throws {
        guard let conninfo = options["server"], let space = options["space"], let run = options["run"] else {
            fail("sync needs --server CONNINFO --space S --run R")
        }
        let count = options["count"].flatMap(Int.init) ?? Int.max
        let server = try await PostgresSyncServer.connect(conninfo)
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
