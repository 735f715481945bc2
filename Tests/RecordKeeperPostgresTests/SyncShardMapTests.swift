import Foundation
import RecordKeeper
import Testing

@testable import RecordKeeperPostgres

/// The shard map: its fixed hash, its overrides and its file format, without a server.
@Suite struct SyncShardMapTests {
    private func map(_ json: String) throws -> SyncShardMap {
        try SyncShardMap(json: Data(json.utf8))
    }

    private func refusal(_ json: String) -> String {
        do {
            _ = try map(json)
            return "accepted"
        } catch let error as SyncError {
            #expect(error.code == .configuration)
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func `the hash is FNV-1a 64 of the UTF-8 bytes under jump consistent hashing, with fixed values`() {
        // FNV-1a's published test vectors.
        #expect(SyncShardMap.fnv1a64([]) == 0xcbf2_9ce4_8422_2325)
        #expect(SyncShardMap.fnv1a64(Array("a".utf8)) == 0xaf63_dc4c_8601_ec8c)
        #expect(SyncShardMap.fnv1a64(Array("foobar".utf8)) == 0x8594_4171_f739_67e8)
        // Shards of a few spaces for 1, 2, 3, 4 and 10 shards, as an independent implementation
        // of the paper's algorithm computes them: a change here moves spaces in every deployment.
        let expected: [String: [Int]] = [
            "alice": [0, 0, 0, 3, 4], "bob": [0, 0, 2, 2, 2], "carol": [0, 0, 2, 3, 7],
            "space-1": [0, 0, 0, 3, 8], "ü": [0, 0, 0, 0, 8],
        ]
        for (space, shards) in expected {
            #expect([1, 2, 3, 4, 10].map { SyncShardMap.hashShard(of: space, count: $0) } == shards, "\(space)")
        }
    }

    @Test func `spaces spread over the shards, and a shard added moves spaces only onto it`() {
        let spaces = (0..<2000).map { "space-\($0)" }
        for count in 1...6 {
            let before = spaces.map { SyncShardMap.hashShard(of: $0, count: count) }
            let after = spaces.map { SyncShardMap.hashShard(of: $0, count: count + 1) }
            var moved = 0
            for (old, new) in zip(before, after) where old != new {
                #expect(new == count, "a space moved between old shards")
                moved += 1
            }
            // About 1 in count + 1 spaces move; every shard gets a fair share.
            #expect(moved > spaces.count / (count + 1) / 2 && moved < spaces.count * 2 / (count + 1))
            for shard in 0...count {
                #expect(after.filter { $0 == shard }.count > spaces.count / (count + 1) / 2)
            }
        }
    }

    @Test func `an override sends its space to the named shard, every other space goes by the hash`() throws {
        let map = try map(
            """
            {"version": 1, "shards": [{"name": "a", "conninfo": "host=a"}, {"name": "b", "conninfo": "host=b", "wake_conninfo": "host=b-direct"}],
             "overrides": {"alice": "b"}}
            """)
        #expect(SyncShardMap.hashShard(of: "alice", count: 2) == 0)
        #expect(map.shard(for: "alice").name == "b")
        #expect(map.shard(for: "alice").wakeConninfo == "host=b-direct")
        #expect(map.shard(for: "bob").name == "a")
        #expect(map.shards.map(\.wakeConninfo) == [nil, "host=b-direct"])
    }

    @Test func `a map that cannot be used is refused with the problem named`() {
        #expect(refusal(#"{"version": 1, "shards": []}"#).contains("lists no shard"))
        #expect(
            refusal(#"{"version": 1, "shards": [{"name": "a", "conninfo": "host=a"}, {"name": "a", "conninfo": "host=b"}]}"#)
                .contains("'a' is listed twice"))
        #expect(
            refusal(#"{"version": 1, "shards": [{"name": "a", "conninfo": "host=a"}], "overrides": {"alice": "c"}}"#)
                .contains("space 'alice' names shard 'c', which the map does not list"))
        #expect(refusal(#"{"version": 1, "shards": [{"name": "", "conninfo": "host=a"}]}"#).contains("empty name"))
        #expect(refusal(#"{"version": 1, "shards": [{"name": "a", "conninfo": ""}]}"#).contains("'a' has an empty conninfo"))
        #expect(refusal(#"{"version": 1, "shards": [{"name": "a"}]}"#).contains("'conninfo' is missing in shards[0]"))
        #expect(refusal(#"{"shards": [{"name": "a", "conninfo": "host=a"}]}"#).contains("'version' is missing"))
        #expect(refusal(#"{"version": 2, "shards": [{"name": "a", "conninfo": "host=a"}]}"#).contains("version is 2"))
        #expect(refusal(#"{"version": 1, "shards": {"a": "host=a"}}"#).contains("shards has the wrong type"))
        #expect(refusal("not json").contains("not valid JSON"))
        #expect(
            refusal(#"{"version": 1, "shards": [{"name": "a", "conninfo": "host=a"}], "overrides": {"": "a"}}"#)
                .contains("empty space"))
    }
}
