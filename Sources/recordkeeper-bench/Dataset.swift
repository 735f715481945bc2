import Foundation
import HarnessSupport

/// The record every workload stores: about 100 bytes of JSON once encoded.
struct Item: Codable, Sendable, Identifiable, Equatable {
    var id: String
    var title: String
    var count: Int
    var updated: Date
}

/// The collection every workload uses.
let benchCollection = "items"

/// Deterministic data of the bench: keys `k000123`, items and their encoded payloads.
enum Dataset {
    /// `k` followed by the index zero-padded to six digits (seven from one million on).
    static func key(_ index: Int) -> String {
        let digits = String(index)
        return digits.count >= 6 ? "k" + digits : "k" + String(repeating: "0", count: 6 - digits.count) + digits
    }

    static let epoch = Date(timeIntervalSinceReferenceDate: 786_000_000)

    static func item(_ index: Int, revision: Int = 0) -> Item {
        Item(
            id: key(index),
            title: "Item \(index) of the bench collection, rev \(revision)",
            count: index &* 7 &+ revision,
            updated: epoch.addingTimeInterval(Double(index) + Double(revision) / 1000)
        )
    }

    /// The encoder of the byte-level payloads: the settings of `RecordCoding.makeEncoder()`
    /// (sorted keys, unescaped slashes), so the fixtures hold the bytes a repository writes.
    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func items(count: Int, revision: Int = 0) -> [Item] {
        (0..<count).map { item($0, revision: revision) }
    }

    /// Payloads for the byte-level workloads, encoded once outside any measurement.
    static func payloads(count: Int, revision: Int = 0) throws -> [String: Data] {
        let encoder = makeEncoder()
        var result: [String: Data] = [:]
        result.reserveCapacity(count)
        for index in 0..<count {
            result[key(index)] = try encoder.encode(item(index, revision: revision))
        }
        return result
    }
}

extension Dataset {
    /// `count` random existing indexes below `n`, the same for every implementation.
    static func randomIndexes(count: Int, below n: Int, seed: UInt64) -> [Int] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in Int.random(in: 0..<n, using: &generator) }
    }
}
