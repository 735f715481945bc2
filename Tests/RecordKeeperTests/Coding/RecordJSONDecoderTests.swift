import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// What the fast decoder accepts and how it fails: the same inputs Foundation accepts, and
/// `DecodingError`s with the coding path of the failing value.
@Suite struct RecordJSONDecoderTests {
    struct Inner: Codable, Equatable { var values: [Int] }
    struct Outer: Codable, Equatable { var name: String; var inner: Inner; var when: Date? }

    private func path(of error: any Error) -> String {
        let context: DecodingError.Context?
        switch error as? DecodingError {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c): context = c
        default: context = nil
        }
        return context?.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".") ?? "?"
    }

    @Test func `whitespace, escapes, a BOM, trailing commas and every number form are accepted as by Foundation`() throws {
        let inputs = [
            " \n\t{ \"name\" : \"a\\u00e9\\n\\/\\ud83d\\ude00\" , \"inner\" : { \"values\" : [ 1 , -0 , 1e2 , 1.0 , 2.50E+1 ] } } \r\n",
            "\u{FEFF}{\"name\":\"x\",\"inner\":{\"values\":[1,]},}",
            #"{"inner":{"values":[]},"name":"","when":null,"extra":[{"deep":[true,false,null]}]}"#,
            #"{"name":"q","inner":{"values":[0]},"when":-1.5e-3}"#,
            #"{"name":"dup","name":"second","inner":{"values":[3]}}"#,
        ]
        for input in inputs {
            let data = Data(input.utf8)
            let expected = try RecordCoding.makeDecoder().decode(Outer.self, from: data)
            #expect(try RecordJSONDecoder().decode(Outer.self, from: data) == expected, "\(input)")
        }
    }

    @Test func `numbers out of range or with fractions for integers fail as in Foundation`() throws {
        let cases: [(String, Bool)] = [
            ("[1.5]", false), ("[300]", true), ("[1e2]", true), ("[99999999999999999999]", false), ("[1e400]", false),
            ("[-0]", true), ("[0.5e1]", true), ("[-129]", false), ("[127.0]", true),
        ]
        for (input, _) in cases {
            let data = Data(input.utf8)
            let foundation = Result { try RecordCoding.makeDecoder().decode([Int8].self, from: data) }
            let fast = Result { try RecordJSONDecoder().decode([Int8].self, from: data) }
            #expect((try? fast.get()) == (try? foundation.get()), "\(input)")
        }
        for input in ["1e400", "-1e400", "1.7976931348623159e308", "2.5e-324", "0e0", "123456789012345678901234567890"] {
            let data = Data(input.utf8)
            let foundation = try? RecordCoding.makeDecoder().decode(Double.self, from: data)
            #expect((try? RecordJSONDecoder().decode(Double.self, from: data)) == foundation, "\(input)")
        }
    }

    @Test func `a wrong type names the field in the coding path`() throws {
        let data = Data(#"{"name":"n","inner":{"values":[1,"two"]}}"#.utf8)
        let error = try #require(throws: DecodingError.self) { try RecordJSONDecoder().decode(Outer.self, from: data) }
        guard case .typeMismatch = error else { Issue.record("expected typeMismatch, got \(error)"); return }
        #expect(path(of: error) == "inner.values.[1]")
    }

    @Test func `a missing key and a null value are keyNotFound and valueNotFound`() throws {
        let missing = try #require(throws: DecodingError.self) {
            try RecordJSONDecoder().decode(Outer.self, from: Data(#"{"name":"n","inner":{}}"#.utf8))
        }
        guard case .keyNotFound(let key, _) = missing else { Issue.record("expected keyNotFound, got \(missing)"); return }
        #expect(key.stringValue == "values")
        #expect(path(of: missing) == "inner")
        let null = try #require(throws: DecodingError.self) {
            try RecordJSONDecoder().decode(Outer.self, from: Data(#"{"name":null,"inner":{"values":[]}}"#.utf8))
        }
        guard case .valueNotFound = null else { Issue.record("expected valueNotFound, got \(null)"); return }
        #expect(path(of: null) == "name")
    }

    @Test func `invalid JSON is dataCorrupted naming the byte offset`() throws {
        for input in ["", "{", "[1,,2]", "{\"a\" 1}", "01", "1.", "-", "nul", "\"\\x\"", "\"\\ud83d\"", "[1] 2", "{,}", "\"a\u{1}\""] {
            let error = try #require(throws: DecodingError.self, "\(input)") {
                try RecordJSONDecoder().decode([Int].self, from: Data(input.utf8))
            }
            guard case .dataCorrupted(let context) = error else { Issue.record("\(input): \(error)"); continue }
            #expect(context.debugDescription.contains("at byte"))
            #expect(throws: (any Error).self, "Foundation accepts \(input)?") {
                try RecordCoding.makeDecoder().decode([Int].self, from: Data(input.utf8))
            }
        }
    }

    @Test func `invalid Base64, URL and UTF-8 are errors`() throws {
        #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(Data.self, from: Data(#""AQI""#.utf8)) }
        // Foundation's Data(base64Encoded:) on Linux reads these as zero bytes; the codec refuses them.
        for text in ["====", "AA=A", "A===", "AB==", "AQ=I"] {
            #expect(throws: DecodingError.self, "\(text)") { try RecordJSONDecoder().decode(Data.self, from: Data("\"\(text)\"".utf8)) }
        }
        #expect(try RecordJSONDecoder().decode(Data.self, from: Data(#""AAE=""#.utf8)) == Data([0, 1]))
        #expect(try RecordJSONDecoder().decode(Data.self, from: Data(#""""#.utf8)) == Data())
        #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(URL.self, from: Data(#""""#.utf8)) }
        var invalid = Data(#""ab"#.utf8)
        invalid.append(contentsOf: [0xFF, 0x22])
        #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(String.self, from: invalid) }
        let overlong = Data([0x22, 0xC0, 0xAF, 0x22])
        #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(String.self, from: overlong) }
    }

    @Test func `nesting up to 512 levels decodes and deeper is an error, as in Foundation`() throws {
        func nested(_ depth: Int) -> Data { Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8) }
        #expect(try RecordJSONDecoder().decode(Tree.self, from: Data(#"{"list":{"_0":[]}}"#.utf8)) == .list([]))
        struct Anything: Decodable { init(from decoder: any Decoder) throws {} }
        _ = try RecordJSONDecoder().decode(Anything.self, from: nested(512))
        #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(Anything.self, from: nested(513)) }
        #expect(throws: DecodingError.self) { try RecordJSONDecoder().decode(Anything.self, from: nested(100_000)) }
    }

    @Test func `a repository's undecodable record names the key and the field`() async throws {
        try await withStore(.inMemory) { store, _ in
            try await store.put("books", key: "moby", data: Data(#"{"id":"moby","pages":"many","title":"M"}"#.utf8))
            let books = RecordRepository<Book>(store: store, collection: "books")
            let error = try await #require(throws: RepositoryError.self) { try await books.load() }
            #expect(error.code == .undecodableRecord)
            #expect(error.key == "moby")
            #expect(path(of: try #require(error.underlying)) == "pages")
            #expect(error.errorDescription?.contains("pages") == true)
        }
    }

    @Test func `a repository with the Foundation engine reads and writes the same bytes`() async throws {
        try await withStore(.inMemory) { store, _ in
            let fast = RecordRepository<Book>(store: store, collection: "books")
            let foundation = RecordRepository<Book>(store: store, collection: "books", coding: .foundation)
            try await fast.save(Book(id: "a", title: "A/é"))
            #expect(try await foundation.load() == [Book(id: "a", title: "A/é")])
            let stored = try #require(try await store.read("books")?["a"])
            #expect(stored == (try RecordCoding.makeEncoder().encode(Book(id: "a", title: "A/é"))))
        }
    }
}
