import Foundation
import RecordKeeper

/// C1: what the Codable layer costs, to judge whether a faster codec path is worth it.
/// Encodes N items one by one (as a repository does per record) and decodes N payloads,
/// with Foundation's JSONEncoder/JSONDecoder, with the library's generic `RecordJSONEncoder`/
/// `RecordJSONDecoder` (RecordCoding's default, one instance each reused as a repository does),
/// and with a hand-written codec specialised to `Item` that produces the same bytes.
extension BenchRunner {
    func runCodecCost() async throws {
        let n = options.n
        log("C1 codec cost, N=\(n)")
        let items = Dataset.items(count: n)
        let encoder = Dataset.makeEncoder()
        let decoder = JSONDecoder()
        let reference = try items.prefix(1_000).map { try encoder.encode($0) }
        for (item, bytes) in zip(items, reference) where ItemCodec.encode(item) != bytes {
            throw BenchFailure("C1: the specialised encoder differs from JSONEncoder for \(item.id): "
                + String(decoding: ItemCodec.encode(item), as: UTF8.self) + " vs " + String(decoding: bytes, as: UTF8.self))
        }
        for bytes in reference {
            guard let fast = ItemCodec.decode(bytes), try fast == decoder.decode(Item.self, from: bytes) else {
                throw BenchFailure("C1: the specialised decoder disagrees with JSONDecoder")
            }
        }
        let recordEncoder = RecordJSONEncoder()
        let recordDecoder = RecordJSONDecoder()
        for (item, bytes) in zip(items, reference) {
            guard try recordEncoder.encode(item) == bytes, try recordDecoder.decode(Item.self, from: bytes) == item else {
                throw BenchFailure("C1: RecordJSONEncoder/Decoder disagree with Foundation for \(item.id)")
            }
        }
        let payloads = try items.map { try encoder.encode($0) }

        var samples: [String: [Double]] = [:]
        for _ in 0..<options.repeats {
            var sink = 0
            samples["encode|Foundation JSON", default: []].append(try measure {
                for item in items { sink &+= try encoder.encode(item).count }
            })
            samples["encode|specialised", default: []].append(measure {
                for item in items { sink &+= ItemCodec.encode(item).count }
            })
            samples["encode|RecordJSON", default: []].append(try measure {
                for item in items { sink &+= try recordEncoder.encode(item).count }
            })
            samples["decode|RecordJSON", default: []].append(try measure {
                for data in payloads { sink &+= try recordDecoder.decode(Item.self, from: data).count }
            })
            samples["decode|Foundation JSON", default: []].append(try measure {
                for data in payloads { sink &+= try decoder.decode(Item.self, from: data).count }
            })
            samples["decode|specialised", default: []].append(measure {
                for data in payloads { sink &+= ItemCodec.decode(data)?.count ?? 0 }
            })
            guard sink != 0 else { throw BenchFailure("C1 produced nothing") }
        }
        for (id, values) in samples.sorted(by: { $0.key < $1.key }) {
            let parts = id.split(separator: "|").map(String.init)
            rows(adding: ResultRow(workload: "C1", variant: parts[0], n: n, implementation: parts[1], metric: "time_s",
                                   value: Stats.median(values), ratioToRaw: nil, samples: values.count, note: nil))
        }
    }

    private func rows(adding row: ResultRow) { appendRows([row]) }
}

/// A JSON codec for `Item` alone, byte-identical to `RecordCoding` (JSONEncoder with
/// `.sortedKeys`, `.withoutEscapingSlashes` and the default date strategy: seconds since 2001
/// as a Double).
enum ItemCodec {
    static func encode(_ item: Item) -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        bytes.append(contentsOf: #"{"count":"#.utf8)
        bytes.append(contentsOf: String(item.count).utf8)
        bytes.append(contentsOf: #","id":"#.utf8)
        appendString(item.id, to: &bytes)
        bytes.append(contentsOf: #","title":"#.utf8)
        appendString(item.title, to: &bytes)
        bytes.append(contentsOf: #","updated":"#.utf8)
        appendDouble(item.updated.timeIntervalSinceReferenceDate, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return Data(bytes)
    }

    private static func appendDouble(_ value: Double, to bytes: inout [UInt8]) {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    private static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
            case 0x0C: bytes.append(contentsOf: #"\f"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Decodes the four fields in any order; nil for anything else (callers fall back to
    /// JSONDecoder).
    static func decode(_ data: Data) -> Item? {
        data.withUnsafeBytes { raw -> Item? in
            var parser = Parser(bytes: raw.bindMemory(to: UInt8.self))
            return parser.item()
        }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func item() -> Item? {
            var id: String?, title: String?, count: Int?, updated: Double?
            guard consume(UInt8(ascii: "{")) else { return nil }
            repeat {
                guard let key = string(), consume(UInt8(ascii: ":")) else { return nil }
                switch key {
                case "id": id = string()
                case "title": title = string()
                case "count": count = number().flatMap { Int($0) }
                case "updated": updated = number().flatMap { Double($0) }
                default: return nil
                }
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "}")), let id, let title, let count, let updated else { return nil }
            return Item(id: id, title: title, count: count, updated: Date(timeIntervalSinceReferenceDate: updated))
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x09 || bytes[index] == 0x0D {
                index += 1
            }
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func number() -> Substring? {
            let start = index
            while index < bytes.count, let scalar = Optional(bytes[index]),
                  (scalar >= 0x30 && scalar <= 0x39) || scalar == 0x2D || scalar == 0x2B || scalar == 0x2E || scalar == 0x65 || scalar == 0x45 {
                index += 1
            }
            guard index > start else { return nil }
            return Substring(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
        }

        /// A string without escapes (anything escaped returns nil: the fallback handles it).
        mutating func string() -> String? {
            guard consume(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\") { return nil }
                index += 1
            }
            guard index < bytes.count else { return nil }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            index += 1
            return text
        }
    }
}
