import RecordKeeperSync

/// A space whose data sits on a shard the map does not route it to: the map changed (a shard
/// added or removed, an override dropped) without pinning the space where it was.
public struct MisplacedSyncSpace: Sendable, Hashable, CustomStringConvertible {
    /// The space.
    public var space: String
    /// The shard holding its data.
    public var foundOn: String
    /// The shard the map sends its requests to.
    public var routedTo: String

    /// Creates a report.
    public init(space: String, foundOn: String, routedTo: String) {
        self.space = space
        self.foundOn = foundOn
        self.routedTo = routedTo
    }

    public var description: String { "space '\(space)' is on shard '\(foundOn)' but the map routes it to '\(routedTo)'" }
}

extension ShardedPostgresSyncServer {
    /// Every space found on a shard the map does not route it to, shard after shard, in byte
    /// order of the spaces (it reads each shard's list of spaces, 1000 at a time).
    ///
    /// Serving such a map would be wrong, not slow: the space's requests would reach a shard
    /// where it has no history (counter 0), so devices' cursors and base versions would
    /// refer to changes that shard never saw. Pin each space with an override to the shard
    /// it is on (``pinningOverrides(for:)``), or move its data first (docs/SCALING.md).
    ///
    /// - Throws: ``RecordKeeper/SyncError`` (``RecordKeeper/SyncError/Code/unreachable``,
    ///   ``RecordKeeper/SyncError/Code/serverFailure``), naming the shard.
    public func misplacedSpaces() async throws -> [MisplacedSyncSpace] {
        var misplaced: [MisplacedSyncSpace] = []
        for (index, server) in servers.enumerated() {
            let name = map.shards[index].name
            var after = ""
            while true {
                let spaces: [String]
                do {
                    spaces = try await server.spaces(after: after, limit: 1000)
                } catch let error as SyncError {
                    throw Self.onShard(name, error)
                }
                guard let last = spaces.last else { break }
                for space in spaces where map.shardIndex(for: space) != index {
                    misplaced.append(MisplacedSyncSpace(space: space, foundOn: name, routedTo: map.shard(for: space).name))
                }
                after = last
            }
        }
        return misplaced
    }

    /// Throws when a space sits on a shard the map does not route it to (see
    /// ``misplacedSpaces()``): what a relay checks before it serves a map.
    ///
    /// - Throws: ``RecordKeeper/SyncError/Code/configuration`` naming the first spaces, their
    ///   shards and the fix; what ``misplacedSpaces()`` throws.
    public func checkPlacement() async throws {
        let misplaced = try await misplacedSpaces()
        guard !misplaced.isEmpty else { return }
        let shown = misplaced.prefix(5).map(\.description).joined(separator: "; ")
        let more = misplaced.count > 5 ? " (and \(misplaced.count - 5) more)" : ""
        throw SyncError(
            .configuration,
            "the shard map would move \(misplaced.count) existing space(s): \(shown)\(more); pin them to the shard "
                + "they are on with overrides (recordkeeper-relay check --shard-map prints them) or move their data first")
    }

    /// The overrides that keep `misplaced` spaces where they are, as the map file's
    /// `overrides` object holds them (space → shard name).
    public static func pinningOverrides(for misplaced: [MisplacedSyncSpace]) -> [String: String] {
        Dictionary(misplaced.map { ($0.space, $0.foundOn) }, uniquingKeysWith: { first, _ in first })
    }
}

extension ShardedPostgresSyncServer {
    /// The server of `space`'s shard, after making sure, on the space's first request since
    /// this server started, that no other shard holds the space (one query per other shard).
    ///
    /// `serve` checks every space at start (``checkPlacement()``); this catches the space
    /// created meanwhile by a relay reading another map, before anything is written beside it.
    /// The space is taken as placed (not checked again) only once its own shard holds it: a
    /// space no push created yet is checked at each request, so that one created meanwhile on
    /// another shard (a relay of the old map during a rolling restart) is refused, not given
    /// a second history here.
    ///
    /// - Throws: ``RecordKeeper/SyncError/Code/serverFailure`` naming both shards when another
    ///   shard holds the space (nothing done); what ``PostgresSyncServer/holds(space:)`` throws.
    ///
    /// A space found on no shard at all is not checked again for reads for a few seconds
    /// (``PlacedSpaces/absenceValidity``), so that an account that only pulls (continuous sync
    /// of an empty space) does not cost a query per shard per request; a push (`writing`), which
    /// may create it, always checks until its shard holds it.
    func route(_ space: String, writing: Bool = false) async throws -> PostgresSyncServer {
        let index = map.shardIndex(for: space)
        let checked = await placed.isChecked(space, writing: writing)
        if servers.count > 1, !checked {
            for (other, server) in servers.enumerated() where other != index {
                if try await server.holds(space: space) {
                    throw SyncError(
                        .serverFailure,
                        "space '\(space)' is on shard '\(map.shards[other].name)' but the shard map routes it to "
                            + "'\(map.shards[index].name)': the map moved it (recordkeeper-relay check --shard-map lists "
                            + "such spaces); nothing was done")
                }
            }
            if try await servers[index].holds(space: space) {
                await placed.insert(space)
            } else {
                await placed.noteAbsent(space)
            }
        }
        return servers[index]
    }
}

/// The spaces a sharded server found on no other shard, forgotten all at once past
/// ``limit`` (they are checked again then: one query per other shard each).
actor PlacedSpaces {
    static let limit = 100_000
    /// How long a space found on no shard is taken as absent by reads.
    static let absenceValidity: Duration = .seconds(5)
    private var spaces: Set<String> = []
    private var absent: [String: ContinuousClock.Instant] = [:]

    func contains(_ space: String) -> Bool { spaces.contains(space) }

    func insert(_ space: String) {
        if spaces.count >= Self.limit { spaces.removeAll(keepingCapacity: true) }
        spaces.insert(space)
        absent[space] = nil
    }

    /// Whether `space` needs no placement check now: placed, or (for a read) found on no shard
    /// less than ``absenceValidity`` ago.
    func isChecked(_ space: String, writing: Bool) -> Bool {
        spaces.contains(space) || !writing && recentlyAbsent(space)
    }

    /// Whether `space` was found on no shard less than ``absenceValidity`` ago.
    func recentlyAbsent(_ space: String) -> Bool {
        guard let since = absent[space] else { return false }
        return ContinuousClock.now - since < Self.absenceValidity
    }

    func noteAbsent(_ space: String) {
        if absent.count >= Self.limit { absent.removeAll(keepingCapacity: true) }
        absent[space] = ContinuousClock.now
    }
}
