import Foundation
import HarnessSupport
@testable import RecordKeeper

// Types and values for the codec tests: what records look like, plus the Codable shapes
// that exercise every container of the Encoder/Decoder API.

struct Address: Codable, Equatable, Sendable {
    var street: String
    var city: String
    var zip: String?
}

enum Status: String, Codable, Equatable, Sendable { case draft, published, archived }

enum Shape: Codable, Equatable, Sendable {
    case point
    case circle(radius: Double)
    case rectangle(Double, Double)
    case labelled(String, inner: Address?)
}

struct Person: Codable, Equatable, Sendable {
    var id: UUID
    var name: String
    var age: Int
    var height: Double
    var weight: Float
    var isActive: Bool
    var nickname: String?
    var middleName: String?
    var born: Date
    var avatar: Data
    var balance: Decimal
    var homepage: URL
    var address: Address
    var previous: [Address]
    var tags: [String]
    var scores: [String: Int]
    var byYear: [Int: String]
    var status: Status
    var shapes: [Shape]
    var matrix: [[Int8]]
    var optionals: [Int?]
    var big: UInt64
    var small: Int64
}

/// A recursive value: enums with associated values nested to any depth.
indirect enum Tree: Codable, Equatable, Sendable {
    case leaf(Double)
    case text(String)
    case flag(Bool)
    case none
    case list([Tree])
    case map([String: Tree])
    case numbered([Int: Tree])
}

/// A class hierarchy using `superEncoder()` / `superDecoder()`, as Foundation documents.
class Animal: Codable, Equatable {
    var name: String
    init(name: String) { self.name = name }
    static func == (lhs: Animal, rhs: Animal) -> Bool { lhs.name == rhs.name && type(of: lhs) == type(of: rhs) }
}

final class Dog: Animal, @unchecked Sendable {  // @unchecked: immutable after init in the tests
    var breed: String
    init(name: String, breed: String) {
        self.breed = breed
        super.init(name: name)
    }
    private enum CodingKeys: String, CodingKey { case breed }
    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        breed = try container.decode(String.self, forKey: .breed)
        try super.init(from: container.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(breed, forKey: .breed)
        try super.encode(to: container.superEncoder())
    }
    static func == (lhs: Dog, rhs: Dog) -> Bool { lhs.name == rhs.name && lhs.breed == rhs.breed }
}

/// Hand-written coding that uses nested containers in an interleaved order.
struct Interleaved: Codable, Equatable, Sendable {
    var a: Int
    var b: [String]
    var c: Double

    private enum Keys: String, CodingKey { case outer, list, z, a }
    private enum Inner: String, CodingKey { case c, a }

    init(a: Int, b: [String], c: Double) {
        self.a = a
        self.b = b
        self.c = c
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var inner = container.nestedContainer(keyedBy: Inner.self, forKey: .outer)
        var list = container.nestedUnkeyedContainer(forKey: .list)
        try container.encode(a, forKey: .z)
        try inner.encode(c, forKey: .c)
        for item in b { try list.encode(item) }
        try inner.encode(a, forKey: .a)
        var again = encoder.container(keyedBy: Keys.self)
        try again.encode(a + 1, forKey: .a)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let inner = try container.nestedContainer(keyedBy: Inner.self, forKey: .outer)
        var list = try container.nestedUnkeyedContainer(forKey: .list)
        a = try container.decode(Int.self, forKey: .z)
        c = try inner.decode(Double.self, forKey: .c)
        var items: [String] = []
        while !list.isAtEnd { items.append(try list.decode(String.self)) }
        b = items
        guard try inner.decode(Int.self, forKey: .a) == a, try container.decode(Int.self, forKey: .a) == a + 1 else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "mismatch"))
        }
    }
}

/// A single-value wrapper around a struct.
struct Wrapper: Codable, Equatable, Sendable {
    var address: Address
    init(address: Address) { self.address = address }
    init(from decoder: any Decoder) throws { address = try decoder.singleValueContainer().decode(Address.self) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(address)
    }
}

/// Keeps its container past `encode(to:)`: the fast encoder must notice and fall back.
final class LeakyBox: Encodable, @unchecked Sendable {  // @unchecked: used from one test only
    nonisolated(unsafe) static var leaked: KeyedEncodingContainer<LeakyBox.Keys>?
    enum Keys: String, CodingKey { case value }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .value)
        Self.leaked = container
    }
}

enum Corpus {
    static let floats: [Double] = [
        0, -0.0, 1, -1, 0.1, 0.2, 0.30000000000000004, 1.5, 100, 1e15, 1e16, 1e17, 123456789012345.0,
        1234567890123456.0, 9007199254740992, 9007199254740994, 1e21, 1e22, 1e23, 1.7976931348623157e308, -1.7976931348623157e308,
        Double.leastNonzeroMagnitude, 2.2250738585072014e-308, 1e-7, 1e-6, 0.001, 2.5e-5, 3.141592653589793, 786000123.456,
        Double(Int64.max), Double(Int32.min), 4.35, 0.1 + 0.2, 1 / 3.0, 12345.678e10,
    ]

    static func person(_ index: Int) -> Person {
        var random = SplitMix64(seed: UInt64(index))
        return Person(
            id: UUID(uuidString: String(format: "E621E1F8-C36C-495A-93FC-%012X", index))!,
            name: ["Ada", "Zoë \"Z\" O'Brien", "Ωμέγα/\\path", "line\nbreak\ttab\u{1}\u{1F}\u{7F}", "😀 emoji 👩‍👩‍👧", ""][index % 6],
            age: index * 37 - 100,
            height: floats[index % floats.count],
            weight: Float(floats[(index + 3) % floats.count]).isFinite ? Float(floats[(index + 3) % floats.count]) : 1.5,
            isActive: index % 2 == 0,
            nickname: index % 3 == 0 ? nil : "nick\(index)",
            middleName: nil,
            born: Date(timeIntervalSinceReferenceDate: floats[(index + 7) % floats.count]),
            avatar: Data((0..<(index % 7)).map { UInt8(truncatingIfNeeded: $0 * 73 + index) }),
            balance: [Decimal(string: "3.14")!, Decimal(string: "-0.000001")!, Decimal(string: "1e40")!, Decimal(0),
                      Decimal(string: "12345678901234567890.123")!][index % 5],
            homepage: URL(string: ["https://example.com/a/b?c=d&e=f#g", "file:///tmp/x%20y", "mailto:a@b.c"][index % 3])!,
            address: Address(street: "Main St \(index)", city: "Zürich", zip: index % 2 == 0 ? "8000" : nil),
            previous: (0..<(index % 3)).map { Address(street: "Old \($0)", city: "Bern", zip: nil) },
            tags: ["b", "a", "ä", "A", "a10", "a9"].shuffled(using: &random),
            scores: ["é": 1, "e\u{301}x": 2, "f": 3, "Z": 4, "_": 5, "ａ": 6, "😀": 7, "": 8, "\u{E000}": 9],
            byYear: [2024: "x", -1: "neg", 10: "ten", 9: "nine"],
            status: [Status.draft, .published, .archived][index % 3],
            shapes: [.point, .circle(radius: 2.5), .rectangle(1, 2), .labelled("l", inner: nil),
                     .labelled("m", inner: Address(street: "s", city: "c", zip: "z"))],
            matrix: [[1, -2], [], [Int8.min, Int8.max]],
            optionals: [nil, 1, nil],
            big: UInt64.max - UInt64(index),
            small: Int64.min + Int64(index))
    }

    static func tree(depth: Int) -> Tree {
        var tree = Tree.leaf(1.25)
        for level in 0..<depth {
            switch level % 3 {
            case 0: tree = .list([tree, .none, .flag(true)])
            case 1: tree = .map(["k\(level)": tree, "t": .text("x/y")])
            default: tree = .numbered([level: tree, -level: .leaf(-0.0)])
            }
        }
        return tree
    }
}

/// Encodes `value` with Foundation and with the fast encoder; decodes each output with the
/// other decoder. Returns both payloads.
func foundationAndFast<T: Codable>(_ value: T) throws -> (foundation: Data, fast: Data) {
    let foundation = try RecordCoding.makeEncoder().encode(value)
    let fast = try RecordJSONEncoder().encode(value)
    return (foundation, fast)
}
