import Foundation
import RecordKeeperSync
import RecordKeeperCommandLine
import RecordKeeperPostgres

/// `recordkeeper-relay compact --database CONNINFO | --shard-map FILE [--older-than AGE] [--space S] [--batch N]`:
/// deletes the operation outcomes and tombstones older than AGE that are behind every cursor
/// handed out within it (``PostgresSyncServer/compact(space:olderThan:batch:)``), beside live
/// traffic, and prints one line per space (with a shard map: a space on its shard, or every
/// space of every shard).
enum CompactCommand {
    /// The age unless `--older-than` says otherwise: 30 days.
    static let defaultAge = 30 * 86_400

    static func run(_ settings: RelaySettings) async throws -> ExitCode {
        let database = try RelayDatabase.choose(settings)
        let age = try settings.seconds(
            "older-than", default: defaultAge, minimum: Int(SyncHorizon.bucketSeconds)) ?? defaultAge
        let batch = try settings.integer("batch", default: PostgresSyncServer.defaultCompactionBatch, in: 1...100_000)
        let server = try await database.connect(connections: 1)
        let done: [SyncCompaction]
        if let given = settings.value("space") {
            // Spaces are stored as the relay normalizes them (NFC); one recorded otherwise (by
            // an older version) is found under its own bytes.
            let normalized = given.utf8.allSatisfy { $0 < 0x80 } ? given : given.precomposedStringWithCanonicalMapping
            var space = normalized
            if try await !server.holds(space: normalized) {
                // A space no push reached has nothing to compact: most likely a misspelled name.
                guard normalized != given, try await server.holds(space: given) else {
                    throw RelayToolError(.notFound, "no push ever reached space '\(given)' here: there is nothing to compact; "
                                         + "check its spelling")
                }
                space = given
            }
            done = [try await server.compact(space: space, olderThan: .seconds(age), batch: batch)]
        } else {
            do {
                done = try await server.compactAll(olderThan: .seconds(age), batch: batch)
            } catch let incomplete as SyncCompactionIncomplete {
                // One space failing does not stop the others: print what was done, then each
                // failure, and exit as the failures say.
                print(incomplete.compacted)
                for failure in incomplete.failures {
                    StandardStreams.writeError(
                        "recordkeeper-relay: space=\(failure.space) not compacted: \(failure.error.message)")
                }
                let codes = Set(incomplete.failures.map(\.error.code))
                let exit: ExitCode =
                    codes == [.unreachable] ? .unavailable : codes == [.configuration] ? .configuration : .internalError
                throw RelayToolError(
                    exit,
                    "\(incomplete.failures.count) space(s) could not be compacted (\(incomplete.compacted.count) were); "
                        + "running compact again retries them")
            }
        }
        print(done)
        return .ok
    }

    /// One line per space compacted.
    private static func print(_ done: [SyncCompaction]) {
        for compaction in done {
            StandardStreams.write(
                "space=\(compaction.space) horizon=\(compaction.horizon) tombstones=\(compaction.deletedTombstones) "
                    + "operations=\(compaction.deletedOperations)\n")
        }
    }
}
