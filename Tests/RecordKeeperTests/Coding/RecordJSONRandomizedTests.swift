import Foundation
import HarnessSupport
import Testing
@testable import RecordKeeper

/// Seeded random values encoded by both encoders (same bytes) and decoded by both decoders
/// from each other's output (same values).
@Suite struct RecordJSONRandomizedTests {
    struct Sample: Codable, Equatable {
        var text: String
        var number: Double
        var float: Float
        var integer: Int
        var small: Int8
        var unsigned: UInt32
        var flag: Bool?
        var date: Date
        var data: Data
        var list: [String]
        var byName: [String: Int]
        var byNumber: [Int: Bool]
        var tree: Tree
        var nested: [Sample]
    }

    private static let alphabet: [Unicode.Scalar] = Array("aZ09 _-/\\\"'{}[]:,".unicodeScalars)
        + ["\u{0}", "\u{8}", "\u{9}", "\u{A}", "\u{C}", "\u{D}", "\u{1F}", "\u{7F}", "é", "ß", "€", "\u{2028}", "😀", "\u{10FFFF}", "\u{301}"]

    private static func string(_ random: inout SplitMix64) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &random) {
            scalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &random)])
        }
        return String(scalars)
    }

    private static func double(_ random: inout SplitMix64) -> Double {
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            // Any finite bit pattern: exercises every exponent and digit count.
            while true {
                let value = Double(bitPattern: random.next())
                if value.isFinite { return value }
            }
        case 1: return Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / 1000
        case 2: return Double(Int64.random(in: Int64.min...Int64.max, using: &random))
        default: return Double.random(in: -1e20...1e20, using: &random)
        }
    }

    private static func tree(_ random: inout SplitMix64, depth: Int) -> Tree {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 7), using: &random) {
        case 0: return .leaf(double(&random))
        case 1: return .text(string(&random))
        case 2: return .flag(Bool.random(using: &random))
        case 3: return .none
        case 4: return .list((0..<Int.random(in: 0...3, using: &random)).map { _ in tree(&random, depth: depth + 1) })
        case 5:
            var map: [String: Tree] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &random) { map[string(&random)] = tree(&random, depth: depth + 1) }
            return .map(map)
        default:
            var map: [Int: Tree] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &random) { map[Int.random(in: -100...100, using: &random)] = tree(&random, depth: depth + 1) }
            return .numbered(map)
        }
    }

    private static func sample(_ random: inout SplitMix64, depth: Int = 0) -> Sample {
        var float: Float
        repeat { float = Float(bitPattern: UInt32(truncatingIfNeeded: random.next())) } while !float.isFinite
        var byName: [String: Int] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) { byName[string(&random)] = Int.random(in: Int.min...Int.max, using: &random) }
        var byNumber: [Int: Bool] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) { byNumber[Int.random(in: Int.min...Int.max, using: &random)] = Bool.random(using: &random) }
        return Sample(
            text: string(&random),
            number: double(&random),
            float: float,
            integer: Int.random(in: Int.min...Int.max, using: &random),
            small: Int8.random(in: Int8.min...Int8.max, using: &random),
            unsigned: UInt32.random(in: 0...UInt32.max, using: &random),
            flag: [true, false, nil][Int.random(in: 0..<3, using: &random)],
            date: Date(timeIntervalSinceReferenceDate: double(&random)),
            data: Data((0..<Int.random(in: 0...9, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }),
            list: (0..<Int.random(in: 0...3, using: &random)).map { _ in string(&random) },
            byName: byName,
            byNumber: byNumber,
            tree: tree(&random, depth: 0),
            nested: depth < 2 ? (0..<Int.random(in: 0...2, using: &random)).map { _ in sample(&random, depth: depth + 1) } : [])
    }

    @Test(arguments: [1, 2, 3, 4])
    func `random values encode to Foundation's bytes and decode from each other's output`(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let encoder = RecordJSONEncoder()
        let decoder = RecordJSONDecoder()
        let foundationEncoder = RecordCoding.makeEncoder()
        let foundationDecoder = RecordCoding.makeDecoder()
        for _ in 0..<150 {
            let value = Self.sample(&random)
            let reference = try foundationEncoder.encode(value)
            let fast = try encoder.encode(value)
            #expect(fast == reference, "\(String(decoding: fast, as: UTF8.self)) != \(String(decoding: reference, as: UTF8.self))")
            let decoded = try decoder.decode(Sample.self, from: reference)
            #expect(decoded == value)
            #expect(try foundationDecoder.decode(Sample.self, from: fast) == value)
            // And both decoders read the same value from the same bytes.
            #expect(decoded == (try foundationDecoder.decode(Sample.self, from: reference)))
        }
    }

    @Test func `random doubles and floats print exactly as Foundation prints them`() throws {
        var random = SplitMix64(seed: 99)
        var doubles: [Double] = []
        var floats: [Float] = []
        for _ in 0..<3000 {
            doubles.append(Self.double(&random))
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            if float.isFinite { floats.append(float) }
        }
        let (foundation, fast) = try foundationAndFast(doubles)
        #expect(fast == foundation)
        #expect(try RecordJSONDecoder().decode([Double].self, from: foundation) == doubles)
        let (foundationFloats, fastFloats) = try foundationAndFast(floats)
        #expect(fastFloats == foundationFloats)
        #expect(try RecordJSONDecoder().decode([Float].self, from: foundationFloats) == floats)
    }
}
