import Foundation
import HarnessSupport
import Testing
@testable import RecordKeeper

/// Bad payloads are errors, never crashes: truncated, mutated, invalid UTF-8, deeply nested
/// and huge-number inputs, fed to the fast decoder and checked against Foundation's verdict.
@Suite struct RecordJSONFuzzTests {
    private static func seeds() throws -> [Data] {
        let encoder = RecordCoding.makeEncoder()
        return try [
            encoder.encode(Corpus.person(1)),
            encoder.encode(Corpus.person(4)),
            encoder.encode(Corpus.tree(depth: 6)),
            Data(#"{"a":[1,-2.5e+3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{"c":{}}}"#.utf8),
        ]
    }

    /// Decodes with both decoders; they must agree on success and on the value.
    private func compare<T: Decodable & Equatable>(_ type: T.Type, _ data: Data, _ label: @autoclosure () -> String) {
        let fast = Result { try RecordJSONDecoder().decode(type, from: data) }
        let foundation = Result { try RecordCoding.makeDecoder().decode(type, from: data) }
        switch (fast, foundation) {
        case (.success(let a), .success(let b)): #expect(a == b, "\(label())")
        case (.failure(let error), .failure): #expect(error is DecodingError, "\(label()): \(error)")
        case (.success, .failure(let error)): Issue.record("fast decoder accepted what Foundation rejects (\(error)): \(label())")
        case (.failure(let error), .success): Issue.record("fast decoder rejected what Foundation accepts (\(error)): \(label())")
        }
    }

    @Test func `every truncation of a payload fails cleanly`() throws {
        for seed in try Self.seeds() {
            for length in 0..<seed.count {
                let data = seed.prefix(length)
                #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(Person.self, from: Data(data)) }
                compare(Tree.self, Data(data), "prefix \(length)")
            }
        }
    }

    @Test func `random byte mutations never crash and agree with Foundation`() throws {
        var random = SplitMix64(seed: 7)
        let interesting: [UInt8] = [0x00, 0x1F, 0x22, 0x2C, 0x2D, 0x2E, 0x30, 0x31, 0x3A, 0x45, 0x5B, 0x5C, 0x5D, 0x65, 0x7B, 0x7D, 0x75, 0x80, 0xBF, 0xC0, 0xE0, 0xED, 0xF0, 0xF4, 0xF8, 0xFF]
        for seed in try Self.seeds() {
            for round in 0..<400 {
                var bytes = [UInt8](seed)
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let position = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: bytes[position] = interesting[Int.random(in: 0..<interesting.count, using: &random)]
                    case 1: bytes.remove(at: position)
                    default: bytes.insert(interesting[Int.random(in: 0..<interesting.count, using: &random)], at: position)
                    }
                    if bytes.isEmpty { bytes = [0x7B] }
                }
                let data = Data(bytes)
                _ = try? RecordJSONDecoder().decode(Person.self, from: data)
                compare(Tree.self, data, "round \(round): \(String(decoding: data, as: UTF8.self))")
            }
        }
    }

    @Test func `invalid UTF-8 anywhere in a string is an error`() {
        let sequences: [[UInt8]] = [[0x80], [0xC3], [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFF]]
        for sequence in sequences {
            let data = Data([0x5B, 0x22, 0x61] + sequence + [0x62, 0x22, 0x5D])
            #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode([String].self, from: data) }
            compare([String].self, data, "\(sequence)")
        }
    }

    @Test func `huge numbers and long digit strings are errors or exact values, never traps`() {
        let digits = String(repeating: "9", count: 5000)
        for text in [digits, "-" + digits, "1e999999999999", "0." + digits, "1" + String(repeating: "0", count: 400), "-9223372036854775809", "18446744073709551616"] {
            let data = Data("[\(text)]".utf8)
            compare([Int].self, data, text)
            compare([UInt64].self, data, text)
            compare([Double].self, data, text)
            compare([Float].self, data, text)
        }
    }

    @Test func `deeply nested input is an error, not a stack overflow`() {
        for opener in ["[", "{\"a\":"] {
            let data = Data(String(repeating: opener, count: 200_000).utf8)
            #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(Tree.self, from: data) }
        }
    }
}
