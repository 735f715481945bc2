import Foundation
import Testing
@testable import RecordKeeperTool

/// The tool's reader on the codec's tape: what it accepts, where its errors are, and that it
/// reads a document in bounded pieces.
@Suite struct JSONStreamTests {
    private func stream(_ text: String, pieceSize: Int = 1 << 16) -> JSONStream {
        JSONStream(ByteReader(bytes: Array(text.utf8), name: "test"), pieceSize: pieceSize)
    }

    private func compact(_ text: String) throws -> String {
        String(decoding: try stream(text).readCompactValue(), as: UTF8.self)
    }

    private func syntaxError(_ text: String) -> JSONInputError? {
        do {
            _ = try compact(text)
            return nil
        } catch {
            return error as? JSONInputError
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
            let json = JSONStream(ByteReader(bytes: bytes, name: "test"))
            #expect(throws: JSONInputError.self) { try json.readCompactValue() }
        }
    }

    @Test func `nesting is bounded`() {
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(syntaxError(deep)?.message.contains("nesting") == true)
    }

    @Test func `decoded strings resolve escapes and surrogate pairs`() throws {
        let json = stream(#""a\"\\\/\t\u00e9\ud83d\ude00""#)
        #expect(try json.readString() == "a\"\\/\t\u{e9}\u{1F600}")
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

    @Test func `names with control characters stay on one line, and a backslash is doubled`() {
        #expect(JSONText.displayName("a\tb\nc\u{1}") == "a\\tb\\nc\\u0001")
        #expect(JSONText.displayName(#"a\tb"#) == #"a\\tb"#)
        #expect(JSONText.displayName(#"a\tb"#) != JSONText.displayName("a\tb"), "a backslash and a t, and a tab")
        #expect(JSONText.displayName(#"\u0001"#) == #"\\u0001"#)
        #expect(JSONText.displayName("plain é") == "plain é")
        #expect(String(decoding: JSONText.quoted("q\"\\\u{7}"), as: UTF8.self) == #""q\"\\\u0007""#)
    }

    // MARK: Documents, through the codec's tape

    /// What an import read: collections and records in file order, or the error it stopped at.
    private final class Recorder: ImportVisitor {
        var events: [String] = []
        func collection(_ name: String) throws { events.append("collection \(name)") }
        func record(collection: String, key: String, payload: Data) throws {
            events.append("\(collection)/\(key)=\(String(decoding: payload, as: UTF8.self))")
        }
    }

    private func read(_ text: String, pieceSize: Int = 1 << 16) -> (events: [String], error: JSONInputError?) {
        let recorder = Recorder()
        do {
            try ImportDocument.read(stream(text, pieceSize: pieceSize), into: recorder,
                                    progress: ProgressReporter(verb: "read", isEnabled: false))
            return (recorder.events, nil)
        } catch {
            return (recorder.events, error as? JSONInputError)
        }
    }

    private static let documents = [
        "{\"collections\": {\"c\": {\"a\": 1.50, \"b\": [true, {\"x\": null}]},\n \"d\": {}, \"é\": {\"k\\u00e9\": \"v\"}}}\n",
        "{\"collection\":\"c\"}\n\n{\"key\":\"a\",\"collection\":\"c\",\"value\":-12e3}\r\n"
            + "{\"collection\":\"d\",\"key\":\"b\",\"version\":3,\"value\":{\"$base64\":\"AAE=\"}}",
        "{\"collection\":\"c\",\"key\":\"a\",\"value\":\"😀 \\ud83d\\ude00\"}\n{\"collection\":\"c\",\"key\":\"b\",\"value\":[1,}\n",
        "{\"collections\": {\"c\": {\"a\": 1, \"b\": 12",
        "{\"collection\":\"c\",\"key\":\"a\",\"value\":tru",
        "{\"collection\":\"c\",\"key\":\"a\",\"value\":\"\\ud83d\\u",
        "{\"collection\":\"c\",\"key\":\"a\",\"value\":1} {\"collection\":\"c\"}\n",
    ]

    @Test(arguments: documents)
    func `a document read in pieces of any size gives the same records and the same error`(document: String) {
        let whole = read(document)
        for pieceSize in [1, 2, 3, 5, 8, 13, 64] {
            let pieces = read(document, pieceSize: pieceSize)
            #expect(pieces.events == whole.events, "piece size \(pieceSize)")
            #expect(pieces.error == whole.error, "piece size \(pieceSize)")
        }
    }

    @Test func `records and errors of the documents read in pieces`() {
        #expect(read(Self.documents[0]).events == [
            "collection c", "c/a=1.50", #"c/b=[true,{"x":null}]"#, "collection d", "collection é", #"é/ké="v""#,
        ])
        #expect(read(Self.documents[1]).events == ["collection c", "c/a=-12e3", "collection d", "d/b=\u{0}\u{1}"])
        #expect(read(Self.documents[2]).error == JSONInputError("expected a JSON value", at: .init(line: 2, column: 40)))
        #expect(read(Self.documents[3]).error?.message == "unexpected end of input, expected ',' or '}' in an object")
        #expect(read(Self.documents[4]).error == JSONInputError("invalid literal, expected true", at: .init(line: 1, column: 37)))
        #expect(read(Self.documents[5]).error?.message == "a \\u escape needs four hexadecimal digits")
        #expect(read(Self.documents[6]).error
                == JSONInputError("expected a line break after a record line", at: .init(line: 1, column: 40)))
    }

    @Test func `the window holds one record and one piece, however long the document`() throws {
        let lines = (0..<5_000).map { #"{"collection":"c","key":"k\#($0)","value":{"n":\#($0),"s":"\#(String(repeating: "x", count: $0 % 300))"}}"# }
        let json = stream(lines.joined(separator: "\n"), pieceSize: 128)
        let recorder = Recorder()
        try ImportDocument.read(json, into: recorder, progress: ProgressReporter(verb: "read", isEnabled: false))
        #expect(recorder.events.count == 5_001)
        #expect(json.windowCapacity <= 2 * 128 + 400)

        let export = "{\"collections\": {\"c\": {" + (0..<5_000).map { #""k\#($0)": [\#($0), "\#($0)"]"# }.joined(separator: ",\n")
            + "}}}"
        let exported = stream(export, pieceSize: 128)
        try ImportDocument.read(exported, into: Recorder(), progress: ProgressReporter(verb: "read", isEnabled: false))
        #expect(exported.windowCapacity <= 2 * 128 + 400)
    }

    @Test func `trailing commas are refused where they are`() {
        #expect(read(#"{"collections": {"c": {"k": 1,}}}"#).error
                == JSONInputError("expected a string key", at: .init(line: 1, column: 31)))
        #expect(read(#"{"collections": {"c": {"k": 1},}}"#).error
                == JSONInputError("expected a string key", at: .init(line: 1, column: 32)))
        #expect(read("{\"collection\":\"c\",\"key\":\"k\",\"value\":[1,]}\n").error
                == JSONInputError("expected a JSON value", at: .init(line: 1, column: 40)))
        #expect(read("{\"collection\":\"c\"}\n{\"collection\":\"c\",}\n").error
                == JSONInputError("expected a string key", at: .init(line: 2, column: 19)))
        #expect(read("{\"collection\":\"c\",\"key\":\"k\",\"value\":{\"a\":1,}}").error
                == JSONInputError("expected a string key", at: .init(line: 1, column: 44)))
        #expect(syntaxError("[1,]") == JSONInputError("expected a JSON value", at: .init(line: 1, column: 4)))
    }

    @Test func `a value may nest 256 levels and no deeper`() {
        func line(_ depth: Int) -> String {
            #"{"collection":"c","key":"k","value":"# + String(repeating: "[", count: depth)
                + String(repeating: "]", count: depth) + "}"
        }
        #expect(read(line(256)).error == nil)
        #expect(read(line(257)).error
                == JSONInputError("nesting deeper than 256 levels", at: .init(line: 1, column: 37 + 256)))
    }

    @Test func `errors in a change set name their line and column`() {
        func changeSetError(_ text: String) -> JSONInputError? {
            do {
                _ = try ApplyCommand.parseChangeSet(stream(text, pieceSize: 3))
                return nil
            } catch {
                return error as? JSONInputError
            }
        }
        #expect(changeSetError("{\n  \"upserts\": {\n    \"a\": 1,\n    \"b\": tru\n  }\n}\n")
                == JSONInputError("invalid literal, expected true", at: .init(line: 4, column: 10)))
        #expect(changeSetError("{\"upserts\": {\"a\": 1,}}")
                == JSONInputError("expected a string key", at: .init(line: 1, column: 21)))
        #expect(changeSetError("{\"removals\": [\"a\",]}")
                == JSONInputError("expected a string", at: .init(line: 1, column: 19)))
        #expect(changeSetError("{\"removals\": [\"k\"],\n \"upserts\": {\"k\": 1}}")
                == JSONInputError("key \"k\" is both upserted and removed", at: .init(line: 1, column: 15)))
    }
}
