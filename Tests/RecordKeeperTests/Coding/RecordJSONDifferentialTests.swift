import Foundation
import Testing
@testable import RecordKeeper

/// The fast coders against Foundation's with `RecordCoding`'s settings: the same bytes out,
/// and each decodes the other's output to an equal value.
@Suite struct RecordJSONDifferentialTests {
    private func check<T: Codable & Equatable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (foundation, fast) = try foundationAndFast(value)
        #expect(String(decoding: fast, as: UTF8.self) == String(decoding: foundation, as: UTF8.self), sourceLocation: sourceLocation)
        #expect(fast == foundation, sourceLocation: sourceLocation)
        #expect(try RecordJSONDecoder().decode(T.self, from: foundation) == value, sourceLocation: sourceLocation)
        #expect(try RecordCoding.makeDecoder().decode(T.self, from: fast) == value, sourceLocation: sourceLocation)
    }

    @Test func `records with every common field type encode to Foundation's bytes`() throws {
        for index in 0..<30 { try check(Corpus.person(index)) }
        try check((0..<12).map(Corpus.person))
    }

    @Test func `floating-point edge values are formatted as Foundation formats them`() throws {
        for value in Corpus.floats {
            try check(value)
            try check(-value)
            try check(Float(value).isFinite ? Float(value) : 0)
            try check([value, value.nextUp, value.nextDown].filter(\.isFinite))
        }
        try check([Float(0.1), Float(1e16), Float(3.4e38), Float(-0.0), Float(1.1), Float.leastNonzeroMagnitude, Float(16777216)])
        try check([Double.leastNonzeroMagnitude, Double.leastNormalMagnitude, Double.greatestFiniteMagnitude, Double.ulpOfOne])
        for exponent in -30...30 { try check(pow(10, Double(exponent)) * 1.2345) }
    }

    @Test func `integers of every width and their extremes encode as Foundation's`() throws {
        try check([Int8.min, Int8.max])
        try check([Int16.min, Int16.max])
        try check([Int32.min, Int32.max])
        try check([Int64.min, Int64.max])
        try check([UInt8.max, UInt8.min])
        try check([UInt16.max])
        try check([UInt32.max])
        try check([UInt64.max, 0])
        try check([Int.min, -1, 0, 9, 10, 99, 100, Int.max])
        try check([UInt.max])
    }

    @Test func `Decimal, URL, UUID, Date and Data use Foundation's JSON forms`() throws {
        try check([Decimal(string: "3.14")!, Decimal(string: "-0.000001")!, Decimal(string: "1e40")!, Decimal(0), Decimal(string: "12345678901234567890123")!])
        try check([URL(string: "https://a.b/c?d=1")!, URL(string: "relative/path")!])
        try check(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)
        try check([Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -1.5), Date(timeIntervalSince1970: 1_700_000_000.123)])
        try check([Data(), Data([0]), Data([1, 2]), Data([1, 2, 3]), Data((0...255).map(UInt8.init))])
    }

    @Test func `strings with escapes, controls and non-ASCII text encode byte for byte`() throws {
        var all = ""
        for scalar in 0..<0x80 { all.unicodeScalars.append(Unicode.Scalar(UInt8(scalar))) }
        try check(all)
        try check(["/", "\\/", "\u{2028}\u{2029}", "\u{FEFF}", "e\u{301}", "\u{10FFFF}", "a\u{0}b", "\"quoted\"", "ＡＢＣ"])
        try check(["key/with\"quote": "v", "tab\tkey": "w", "\u{1}": "x"])
    }

    @Test func `object keys are sorted by UTF-8 bytes like Foundation's sortedKeys`() throws {
        try check(["a10": 1, "a9": 2, "B": 3, "a": 4, "é": 5, "e": 6, "f": 7, "Z": 8, "_": 9, "ａ": 10, "😀": 11, "\u{FF5A}": 12, "aB": 14, "ab": 15, "A": 16])
        try check(["e\u{301}x": 1, "\u{e9}a": 2, "f": 3, "\u{1F600}": 4, "\u{FFFF}": 5, "\u{E000}": 6])
        try check([10: "x", 2: "y", -1: "z", 100: "w"])
        let wide = Dictionary(uniqueKeysWithValues: (0..<300).map { ("key\($0 * 7919 % 1000)", $0) })
        try check(wide)
    }

    @Test func `a reused encoder sorts canonically equivalent but different keys by their own bytes`() throws {
        struct Pair: Encodable {
            var first: String
            var second: String
            struct Key: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { return nil }
            }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(1, forKey: Key(stringValue: first))
                try container.encode(2, forKey: Key(stringValue: second))
            }
        }
        let encoder = RecordJSONEncoder()
        for pair in [Pair(first: "\u{e9}", second: "f"), Pair(first: "e\u{301}", second: "f"), Pair(first: "\u{e9}", second: "f")] {
            #expect(try encoder.encode(pair) == (try RecordCoding.makeEncoder().encode(pair)))
        }
    }

    @Test func `enums, optionals and nested containers match Foundation's structure`() throws {
        try check([Shape.point, .circle(radius: 2), .rectangle(1, 2), .labelled("x", inner: nil), .labelled("y", inner: Address(street: "s", city: "c", zip: nil))])
        try check([Status.draft, .archived])
        try check([Int?.none, 1, nil])
        try check(Interleaved(a: 4, b: ["x", "y"], c: 0.5))
        try check(Wrapper(address: Address(street: "s", city: "c", zip: "z")))
        try check([[String: [Int]]]([["a": [1, 2]], [:], ["b": []]]))
        try check(Corpus.tree(depth: 40))
    }

    @Test func `a class hierarchy through superEncoder and superDecoder matches Foundation`() throws {
        let dog = Dog(name: "Rex", breed: "Collie")
        let (foundation, fast) = try foundationAndFast(dog)
        #expect(fast == foundation)
        let back = try RecordJSONDecoder().decode(Dog.self, from: foundation)
        #expect(back == dog)
    }

    @Test func `top-level scalars encode as JSON fragments`() throws {
        try check(7)
        try check("text")
        try check(true)
        try check(2.5)
        try check(Int?.none)
    }

    @Test func `a container kept past encode(to:) falls back to Foundation and writes the same bytes`() throws {
        let encoder = RecordJSONEncoder()
        let first = try encoder.encode(LeakyBox())
        #expect(first == Data(#"{"value":1}"#.utf8))
        // The kept container now belongs to a finished encode: writing to it must not touch
        // the next record.
        var leaked = try #require(LeakyBox.leaked)
        #expect(throws: (any Error).self) { try leaked.encode(2, forKey: .value) }
        #expect(try encoder.encode(["a": 1]) == Data(#"{"a":1}"#.utf8))
    }

    @Test func `non-finite floats and empty top-level values throw EncodingError`() throws {
        #expect(throws: EncodingError.self) { try RecordJSONEncoder().encode(Double.nan) }
        #expect(throws: EncodingError.self) { try RecordJSONEncoder().encode(["a": Double.infinity]) }
        #expect(throws: EncodingError.self) { try RecordJSONEncoder().encode([Float.nan]) }
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        #expect(throws: EncodingError.self) { try RecordJSONEncoder().encode(Nothing()) }
        #expect(try RecordJSONEncoder().encode([Nothing()]) == Data("[{}]".utf8))
    }

    @Test func `one encoder and decoder reused for many records give the same bytes as fresh ones`() throws {
        let encoder = RecordJSONEncoder()
        let decoder = RecordJSONDecoder()
        for index in 0..<50 {
            let person = Corpus.person(index)
            let bytes = try encoder.encode(person)
            #expect(bytes == (try RecordCoding.makeEncoder().encode(person)))
            #expect(try decoder.decode(Person.self, from: bytes) == person)
        }
    }
}
