import Foundation
import Testing
@testable import RecordKeeperTool

@Suite struct JSONReaderTests {
    private func compact(_ text: String) throws -> String {
        let reader = JSONReader(ByteReader(bytes: Array(text.utf8), name: "test"))
        var out: [UInt8] = []
        try reader.readValue(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private func syntaxError(_ text: String) -> JSONSyntaxError? {
        do {
            _ = try compact(text)
            return nil
        } catch {
            return error as? JSONSyntaxError
        }
    }

    @Test func `values are copied compactly with numbers and escapes unchanged`() throws {
        #expect(try compact(#" { "a" : [ 1.50 , -0 , 2E+10 ] ,"b": "x\u00e9 y\n" , "c":null } "#)
                == #"{"a":[1.50,-0,2E+10],"b":"x\u00e9 y\n","c":null}"#)
        #expect(try compact(#""😀 \ud83d\ude00""#) == #""😀 \ud83d\ude00""#)
    }

    @Test func `errors carry line and column`() {
        let error = syntaxError("{\n  \"a\": 1,\n  \"b\" 2\n}")
        #expect(error?.line == 3)
        #expect(error?.column == 7)
        #expect(error?.message == "expected ':' after a key")
        #expect(syntaxError("[1, 2")?.message == "unexpected end of input, expected ',' or ']' in an array")
    }

    @Test func `columns count characters rather than bytes`() {
        #expect(syntaxError("[\"é\", x]")?.column == 7)
    }

    @Test(arguments: ["01", "1.", "-", "tru", "\"\\x\"", "\"\\ud800\"", "\"\\udc00x\"", "\"a\tb\"", "{1:2}", "[1,]"])
    func `malformed values are refused`(text: String) {
        #expect(syntaxError(text) != nil)
    }

    @Test func `invalid UTF-8 and overlong forms are refused`() {
        for bytes: [UInt8] in [[0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xFF, 0x22]] {
            let reader = JSONReader(ByteReader(bytes: bytes, name: "test"))
            var out: [UInt8] = []
            #expect(throws: JSONSyntaxError.self) { try reader.readValue(into: &out) }
        }
    }

    @Test func `nesting is bounded`() {
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(syntaxError(deep)?.message.contains("nesting") == true)
    }

    @Test func `decoded strings resolve escapes and surrogate pairs`() throws {
        let reader = JSONReader(ByteReader(bytes: Array(#""a\"\\\/\t\u00e9\ud83d\ude00""#.utf8), name: "test"))
        #expect(try reader.readString() == "a\"\\/\t\u{e9}\u{1F600}")
    }

    @Test func `exports keep compact JSON and mark everything else as base64`() {
        func export(_ text: String) -> String {
            String(decoding: PayloadCoding.exportJSON(for: Data(text.utf8)), as: UTF8.self)
        }
        #expect(export(#"{"a":1}"#) == #"{"a":1}"#)
        #expect(export(#"{"a": 1}"#) == #"{"$base64":"eyJhIjogMX0="}"#)
        #expect(export("hello") == #"{"$base64":"aGVsbG8="}"#)
        #expect(export(#"{"$base64":"aGk="}"#).hasPrefix(#"{"$base64":"eyIkYmFzZTY0"#))
        #expect(export("") == #"{"$base64":""}"#)
    }

    @Test func `payloads read back exactly what exports wrote`() throws {
        let samples: [Data] = [Data(#"{"a":1}"#.utf8), Data(#"{"a": 1}"#.utf8), Data([0, 1, 255]), Data(),
                               Data(#"{"$base64":"aGk="}"#.utf8), Data(#""text""#.utf8), Data("1e400".utf8)]
        for sample in samples {
            let exported = PayloadCoding.exportJSON(for: sample)
            #expect(try PayloadCoding.payload(fromCompactJSON: exported) == sample)
        }
    }

    @Test func `text output prints JSON compactly and other bytes with a base64 prefix`() {
        #expect(String(decoding: PayloadCoding.text(for: Data("[1, 2]".utf8)), as: UTF8.self) == "[1,2]")
        #expect(String(decoding: PayloadCoding.text(for: Data([0xFF])), as: UTF8.self) == "base64:/w==")
    }

    @Test func `names with control characters stay on one line`() {
        #expect(JSONText.displayName("a\tb\nc\u{1}") == "a\\tb\\nc\\u0001")
        #expect(String(decoding: JSONText.quoted("q\"\\\u{7}"), as: UTF8.self) == #""q\"\\\u0007""#)
    }
}
