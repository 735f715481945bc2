import Foundation
import RecordKeeperCoding
import Testing

/// The tape parser's two syntaxes, its error positions, and the promise a reader of a part of
/// its input relies on: text cut short is "needs more input", never another error.
@Suite struct JSONTapeParserTests {
    private func parse(_ text: String, _ syntax: JSONSyntax) -> JSONSyntaxError? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONTapeParser(bytes: buffer, syntax: syntax)
            do throws(JSONSyntaxError) {
                try parser.parse()
                return nil
            } catch {
                return error
            }
        }
    }

    private func position(_ text: String, _ error: JSONSyntaxError?) -> JSONTextPosition? {
        guard let error else { return nil }
        return Array(text.utf8).withUnsafeBufferPointer { error.position(in: $0) }
    }

    @Test func `the strict syntax refuses trailing commas, a byte order mark and deep nesting; Foundation's accepts them`() {
        let nested = { (depth: Int) in String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        for text in ["[1,]", #"{"a":1,}"#, "\u{FEFF}[1]", nested(257)] {
            #expect(parse(text, .strict) != nil, "\(text.prefix(20))")
        }
        for text in ["[1,]", #"{"a":1,}"#, "\u{FEFF}[1]", nested(257), nested(512)] {
            #expect(parse(text, .foundationCompatible) == nil, "\(text.prefix(20))")
        }
        #expect(parse(nested(256), .strict) == nil)
        #expect(parse(nested(513), .foundationCompatible)?.reason == "nesting deeper than 512 levels")
        #expect(parse("[,]", .foundationCompatible) != nil)
        #expect(parse("{,}", .foundationCompatible) != nil)
    }

    @Test func `errors name a line and a column counted in characters`() {
        let text = "{\n  \"é\": [1,\n   2,]\n}"
        let error = parse(text, .strict)
        #expect(error?.reason == "expected a JSON value")
        #expect(position(text, error) == JSONTextPosition(line: 3, column: 6))
        let control = "[\"a\tb\"]"
        #expect(parse(control, .strict)?.reason == "control character in a string must be escaped")
        #expect(position(control, parse(control, .strict)) == JSONTextPosition(line: 1, column: 4))
        #expect(parse("[1] x", .strict)?.reason == "unexpected content after the value")
    }

    @Test func `every prefix of valid text needs more input or parses to its end`() {
        let texts = [
            #"{"a": [1, -2.5e+3, true, false, null], "s": "x\u00e9\ud83d\ude00\n😀é", "o": {}}"#,
            #"[0, 10, "\\\"", [[]]]"#,
        ]
        for text in texts {
            let bytes = Array(text.utf8)
            for length in 0..<bytes.count {
                bytes.withUnsafeBufferPointer { all in
                    var parser = JSONTapeParser(bytes: UnsafeBufferPointer(rebasing: all[0..<length]), syntax: .strict)
                    do throws(JSONSyntaxError) {
                        #expect(try parser.parseValue(at: 0) == length, "\(length) bytes of \(text)")
                    } catch {
                        #expect(error.needsMoreInput, "\(length) bytes of \(text): \(error.reason)")
                    }
                }
            }
        }
        for text in ["[1,x", "tx", #""\x"#, "[01", "[\"\u{01}"] {
            #expect(parse(text, .strict)?.needsMoreInput == false, "\(text)")
        }
    }

    @Test func `the decoder's error says where the text is not JSON`() throws {
        let error = try #require(throws: DecodingError.self) {
            try RecordJSONDecoder().decode([Int].self, from: Data("[1,\n 2 3]".utf8))
        }
        guard case .dataCorrupted(let context) = error else { Issue.record("\(error)"); return }
        #expect(context.debugDescription
                == "The given data was not valid JSON: expected ',' or ']' in an array at byte 7 (line 2, column 4).")
    }
}
