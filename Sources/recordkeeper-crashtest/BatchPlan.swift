import Foundation
import HarnessSupport

/// One batch of the crash test: records in one or more collections that must be stored all
/// together or not at all.
///
/// Every record's payload starts with a header line naming the batch and how many records it
/// has, followed by filler whose length and checksum the header states, so a verifier can tell
/// a complete batch from a partial or torn one without knowing the seed:
///
///     rkcrash batch=<id> kind=<apply|write> part=<i> of=<n> bytes=<filler count> fnv=<hex>\n<filler>
///
/// Batches of kind `write` also move a "tail" marker: they remove the previous write batch's
/// `<previous id>/tail` record in collection `tail` and add their own, so exactly one tail per
/// run survives and an unfinished removal would be visible.
struct BatchPlan {
    enum Kind { case apply, write }

    let id: String
    let kind: Kind
    /// (collection, key, payload) of every record, the tail included.
    let records: [(collection: String, key: String, payload: Data)]
    /// The tail record this batch removes, if any.
    let removedTail: String?

    static let tailCollection = "tail"

    /// The `number`-th batch of the run with `seed`; `previousWrite` is the id of the last
    /// write batch before it in this run.
    static func make(seed: UInt64, number: Int, previousWrite: String?, random: inout SplitMix64) -> BatchPlan {
        let id = "\(seed)-\(number)"
        let kind: Kind = random.next() % 2 == 0 ? .apply : .write
        let collections: [String]
        switch kind {
        case .apply: collections = ["c\(random.next() % 4)"]
        case .write:
            let first = Int(random.next() % 4)
            collections = ["c\(first)", "c\((first + 1 + Int(random.next() % 3)) % 4)"]
        }
        let ownParts = 2 + Int(random.next() % 5)
        let parts = ownParts + (kind == .write ? 1 : 0)
        var records: [(collection: String, key: String, payload: Data)] = []
        for part in 0..<ownParts {
            let size = fillerSize(&random)
            records.append(
                (collections[part % collections.count], "\(id)/\(part)",
                 payload(batch: id, kind: kind, part: part, of: parts, size: size, random: &random)))
        }
        if kind == .write {
            records.append(
                (tailCollection, "\(id)/tail",
                 payload(batch: id, kind: kind, part: ownParts, of: parts, size: 16, random: &random)))
        }
        return BatchPlan(
            id: id, kind: kind, records: records,
            removedTail: kind == .write ? previousWrite.map { "\($0)/tail" } : nil)
    }

    /// Mostly small payloads; sometimes several pages, now and then a large one, so kills land
    /// in the middle of overflow-page writes too.
    private static func fillerSize(_ random: inout SplitMix64) -> Int {
        switch random.next() % 100 {
        case 0..<70: return Int(random.next() % 512)
        case 70..<95: return 1_000 + Int(random.next() % 16_000)
        default: return 100_000 + Int(random.next() % 200_000)
        }
    }

    private static func payload(batch: String, kind: Kind, part: Int, of parts: Int, size: Int, random: inout SplitMix64) -> Data {
        var filler = [UInt8](repeating: 0, count: size)
        var word = random.next()
        for index in filler.indices {
            if index % 8 == 0 { word = random.next() }
            filler[index] = UInt8(truncatingIfNeeded: word >> UInt64((index % 8) * 8))
        }
        let header = "rkcrash batch=\(batch) kind=\(kind == .apply ? "apply" : "write") part=\(part) of=\(parts) bytes=\(size) fnv=\(String(fnv1a(filler), radix: 16))\n"
        return Data(header.utf8) + Data(filler)
    }

    static func fnv1a<Bytes: Sequence>(_ bytes: Bytes) -> UInt64 where Bytes.Element == UInt8 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01B3
        }
        return hash
    }
}
