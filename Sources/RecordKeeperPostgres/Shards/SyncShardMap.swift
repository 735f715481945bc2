public import Foundation
import RecordKeeperSync

/// Which PostgreSQL database holds each space: a list of shards and an override list, read
/// from a JSON file every relay shares (docs/SCALING.md "The shard map").
///
/// A space goes to the shard its override names, else to shard
/// `jump(fnv1a64(utf8(space)), shards.count)` (``hashShard(of:count:)``): a fixed function of
/// the space's UTF-8 bytes, the same in every process, on every machine and in every release,
/// never Swift's per-process seeded `Hasher`.
///
/// ```swift
/// let map = try SyncShardMap(json: Data(contentsOf: URL(fileURLWithPath: "shards.json")))
/// let shard = map.shard(for: "alice")        // the shard's name and conninfo
/// ```
public struct SyncShardMap: Sendable, Hashable {
    /// One database.
    public struct Shard: Sendable, Hashable, Codable {
        /// The shard's name, which overrides refer to (unique in the map; never change it).
        public var name: String
        /// Where its query connections go: libpq conninfo or URI (a PgBouncer in transaction
        /// mode, or the server itself).
        public var conninfo: String
        /// A direct conninfo (never a transaction-mode pooler) for the shard's wake session,
        /// the one session that keeps state (`LISTEN`) while live pulls are held; nil:
        /// ``conninfo``. Give it when ``conninfo`` goes through PgBouncer.
        public var wakeConninfo: String?

        /// Creates a shard entry.
        public init(name: String, conninfo: String, wakeConninfo: String? = nil) {
            self.name = name
            self.conninfo = conninfo
            self.wakeConninfo = wakeConninfo
        }

        enum CodingKeys: String, CodingKey {
            case name, conninfo
            case wakeConninfo = "wake_conninfo"
        }
    }

    /// The shards, in the order the hash numbers them. Append a new shard at the end: only
    /// the spaces the hash gives the new shard move (about 1 in `count` of them).
    public let shards: [Shard]
    /// Spaces pinned to a shard, by the shard's name: a hot space moved, or existing spaces
    /// kept where they are when shards are added.
    public let overrides: [String: String]

    /// The map's file format version this library reads.
    public static let formatVersion = 1

    /// Creates a map, checking it.
    ///
    /// - Throws: ``RecordKeeper/SyncError/Code/configuration`` naming the problem: no shard,
    ///   a shard without a name or a conninfo, two shards of one name, an override to a shard
    ///   the map does not have, an empty space.
    public init(shards: [Shard], overrides: [String: String] = [:]) throws {
        guard !shards.isEmpty else { throw Self.invalid("it lists no shard; give at least one") }
        var seen: Set<String> = []
        for (index, shard) in shards.enumerated() {
            guard !shard.name.isEmpty else { throw Self.invalid("shard \(index + 1) has an empty name") }
            guard seen.insert(shard.name).inserted else {
                throw Self.invalid("the shard name '\(shard.name)' is listed twice; each shard needs its own name")
            }
            guard !shard.conninfo.isEmpty else { throw Self.invalid("shard '\(shard.name)' has an empty conninfo") }
            if shard.wakeConninfo?.isEmpty == true {
                throw Self.invalid("shard '\(shard.name)' has an empty wake_conninfo (leave it out to use conninfo)")
            }
        }
        for (space, name) in overrides.sorted(by: { $0.key < $1.key }) {
            guard !space.isEmpty else { throw Self.invalid("an override has an empty space") }
            guard seen.contains(name) else {
                throw Self.invalid("the override of space '\(space)' names shard '\(name)', which the map does not list")
            }
        }
        self.shards = shards
        self.overrides = overrides
    }

    /// Reads a map file's JSON (docs/SCALING.md):
    ///
    /// ```json
    /// {"version": 1,
    ///  "shards": [{"name": "a", "conninfo": "host=db-a dbname=sync"},
    ///             {"name": "b", "conninfo": "host=pgbouncer-b dbname=sync", "wake_conninfo": "host=db-b dbname=sync"}],
    ///  "overrides": {"hot-space": "b"}}
    /// ```
    ///
    /// - Throws: ``RecordKeeper/SyncError/Code/configuration`` for JSON that is not such a map
    ///   (naming the field), an unknown version, and what ``init(shards:overrides:)`` refuses.
    public init(json: Data) throws {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: json)
        } catch let error as DecodingError {
            throw Self.invalid(Self.describe(error))
        } catch {
            throw Self.invalid("it is not JSON: \(error.localizedDescription)")
        }
        guard file.version == Self.formatVersion else {
            throw Self.invalid("its version is \(file.version); this relay reads version \(Self.formatVersion)")
        }
        try self.init(shards: file.shards, overrides: file.overrides ?? [:])
    }

    /// The index in ``shards`` of the shard that holds `space`.
    public func shardIndex(for space: String) -> Int {
        if let name = overrides[space], let index = shards.firstIndex(where: { $0.name == name }) { return index }
        return Self.hashShard(of: space, count: shards.count)
    }

    /// The shard that holds `space`.
    public func shard(for space: String) -> Shard {
        shards[shardIndex(for: space)]
    }

    /// The shard the hash gives `space` among `count` shards, overrides aside:
    /// Lamping and Veach's jump consistent hash of the 64-bit FNV-1a hash of the space's UTF-8
    /// bytes. Both are fixed, documented functions, so every relay and release agrees; growing
    /// from `n` to `n + 1` shards moves only the spaces that now land on the new shard.
    public static func hashShard(of space: String, count: Int) -> Int {
        precondition(count >= 1, "a shard map has at least one shard")
        return jumpHash(fnv1a64(Array(space.utf8)), buckets: count)
    }

    /// 64-bit FNV-1a: offset basis 0xcbf29ce484222325, prime 0x100000001b3.
    static func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// Jump consistent hash (Lamping, Veach 2014, "A Fast, Minimal Memory, Consistent Hash
    /// Algorithm"), as published.
    static func jumpHash(_ key: UInt64, buckets: Int) -> Int {
        var key = key
        var b: Int64 = -1
        var j: Int64 = 0
        while j < Int64(buckets) {
            b = j
            key = key &* 2_862_933_555_777_941_757 &+ 1
            j = Int64(Double(b + 1) * (Double(Int64(1) << 31) / Double((key >> 33) + 1)))
        }
        return Int(b)
    }

    /// The file's shape.
    private struct File: Decodable {
        var version: Int
        var shards: [Shard]
        var overrides: [String: String]?
    }

    private static func invalid(_ problem: String) -> SyncError {
        SyncError(.configuration, "the shard map cannot be used: \(problem)")
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return names.isEmpty ? "the top level" : String(names.drop { $0 == "." })
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return "the field '\(key.stringValue)' is missing\(at)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)) has the wrong type (\(context.debugDescription))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "it is not valid JSON" : "\(path(context)) is not valid (\(context.debugDescription))"
        @unknown default:
            return "it is not a shard map (\(error))"
        }
    }
}
