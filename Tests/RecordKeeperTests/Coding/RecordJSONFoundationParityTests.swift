import Foundation
import Testing
@testable import RecordKeeperCoding

/// Where the fast coders used to part from Foundation's `JSONEncoder`/`JSONDecoder`: keys of
/// nested keyed containers under snake case, nesting too deep to read back, integers written
/// with a fraction or an exponent past 2^53, and 128-bit integers.
@Suite struct RecordJSONFoundationParityTests {
    /// Synthesized `Codable` of an enum with associated values: its payload is a nested keyed
    /// container whose keys are the labels.
    enum Shape: Codable, Equatable {
        case roundedRect(cornerRadius: Double, strokeWidth: Int)
        case circle(radiusInPoints: Double)
    }

    struct Drawing: Codable, Equatable {
        var shapeList: [Shape]
        var mainShape: Shape
    }

    @Test func `nested keyed containers convert their keys from snake case, as Foundation does`() throws {
        let drawing = Drawing(
            shapeList: [.circle(radiusInPoints: 2), .roundedRect(cornerRadius: 1.5, strokeWidth: 3)],
            mainShape: .roundedRect(cornerRadius: 4, strokeWidth: 1))
        let foundation = JSONEncoder()
        foundation.keyEncodingStrategy = .convertToSnakeCase
        foundation.outputFormatting = [.sortedKeys]
        let ours = try RecordJSONEncoder(keys: .snakeCase).encode(drawing)
        #expect(ours == (try foundation.encode(drawing)))
        #expect(String(decoding: ours, as: UTF8.self).contains(#""corner_radius":1.5"#))
        #expect(try RecordJSONDecoder(keys: .snakeCase).decode(Drawing.self, from: ours) == drawing)
    }

    /// A linked list `count` long: an object per element.
    final class Node: Codable {
        var next: Node?
        init(next: Node?) { self.next = next }

        static func chain(_ count: Int) -> Node {
            var node = Node(next: nil)
            for _ in 1..<count { node = Node(next: node) }
            return node
        }
    }

    @Test func `objects nested 512 deep are refused when encoding, as Foundation does, not stored unreadable`() throws {
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Node.chain(512)) }
        #expect(throws: EncodingError.self) { try RecordJSONEncoder().encode(Node.chain(512)) }
        #expect(throws: EncodingError.self) { try RecordJSONEncoder().encode(Node.chain(600)) }
        // 511 levels: written, and read back.
        let deepest = try RecordJSONEncoder().encode(Node.chain(511))
        #expect(deepest == (try JSONEncoder().encode(Node.chain(511))))
        _ = try RecordJSONDecoder().decode(Node.self, from: deepest)
    }

    struct Wide: Codable, Equatable {
        var signed: Int64
        var unsigned: UInt64
    }

    @Test(arguments: [
        (#"{"signed":9007199254740993.0,"unsigned":1}"#, Wide(signed: 9_007_199_254_740_993, unsigned: 1), true),
        (#"{"signed":12345678901234567e0,"unsigned":1}"#, Wide(signed: 12_345_678_901_234_567, unsigned: 1), true),
        (#"{"signed":-0.0,"unsigned":1e3}"#, Wide(signed: 0, unsigned: 1000), true),
        // The extremes: this toolchain's Foundation refuses them; their digits say them exactly.
        (#"{"signed":9223372036854775807.0,"unsigned":1.8446744073709551615e19}"#, Wide(signed: .max, unsigned: .max), false),
        (#"{"signed":-9.223372036854775808e18,"unsigned":0.5e1}"#, Wide(signed: .min, unsigned: 5), false),
    ])
    func `integers written with a fraction or an exponent decode exactly, past 2^53 too`(
        json: String, expected: Wide, foundationAgrees: Bool
    ) throws {
        let data = Data(json.utf8)
        #expect(try RecordJSONDecoder().decode(Wide.self, from: data) == expected)
        if foundationAgrees { #expect(try JSONDecoder().decode(Wide.self, from: data) == expected) }
    }

    @Test(arguments: [
        #"{"signed":1.5,"unsigned":1}"#, #"{"signed":9223372036854775808.0,"unsigned":1}"#,
        #"{"signed":1,"unsigned":-1.0}"#, #"{"signed":1e400,"unsigned":1}"#,
    ])
    func `a number with a fraction or out of range is not an integer`(json: String) {
        #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(Wide.self, from: Data(json.utf8)) }
    }

    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    struct Huge: Codable, Equatable {
        var big: Int128
        var bigger: UInt128
        var list: [Int128]
    }

    @Test func `128-bit integers are written and read as Foundation does`() throws {
        guard #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) else { return }
        let value = Huge(big: .min, bigger: .max, list: [1, -1, Int128(Int64.max) * 4])
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys]
        let ours = try RecordJSONEncoder().encode(value)
        #expect(ours == (try foundation.encode(value)))
        #expect(try RecordJSONDecoder().decode(Huge.self, from: ours) == value)
        #expect(try RecordJSONDecoder().decode(Int128.self, from: Data("170141183460469231731687303715884105727".utf8)) == .max)
    }
}
