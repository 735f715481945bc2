import Foundation
import Testing
@testable import RecordKeeperCoding
@testable import RecordKeeperSync

/// The relay's fast JSON of operations and pages writes exactly the bytes of the library's
/// encoder, so the relay's wire format does not depend on which one wrote a body.
@Suite struct SyncWireJSONTests {
    private static let texts = ["items", "a b", "quote \" and \\ slash /", "tab\tnew\nline\u{1}", "ä/%+&=", "😀"]

    private static func changes() -> [SyncChange] {
        texts.enumerated().flatMap { index, text in
            [
                SyncChange(collection: text, key: "k\(index)", value: .payload(Data(text.utf8)), base: nil,
                           itemVersion: index.isMultiple(of: 2) ? index + 1 : nil),
                SyncChange(collection: "notes", key: text, value: .tombstone, base: SyncServerVersion(Int64(index) * 1_000_003),
                           policy: .lastWriterWins),
                SyncChange(collection: "notes", key: text + "-empty", value: .payload(Data()), base: SyncServerVersion(0),
                           itemVersion: Int(Int32.max)),
            ]
        }
    }

    @Test func `the line ends of an answer are offsets from its start, in a slice too`() {
        #expect(SyncWireJSON.lineEnds(Data()) == [])
        #expect(SyncWireJSON.lineEnds(Data("no end".utf8)) == [])
        #expect(SyncWireJSON.lineEnds(Data("a\nbc\n\nd".utf8)) == [1, 4, 5])
        let whole = Data("xx\nab\ncd\n".utf8)
        let slice = whole[3...]
        #expect(SyncWireJSON.lineEnds(slice) == [2, 5])
    }

    @Test func `an operation is written as the encoder writes it, with and without changes and predecessors`() throws {
        let changes = Self.changes()
        let first = SyncOperation(device: "phone \"7\"", sequence: 1, predecessor: .firstOfDevice, changes: changes)
        let operations = [
            first,
            SyncOperation(device: "d", sequence: Int64.max, predecessor: .operation(first.id), changes: [changes[1]]),
            SyncOperation(device: "d", sequence: 3, changes: []),
        ]
        for operation in operations {
            let fast = try SyncWireJSON.encode(operation)
            #expect(fast == (try RecordJSONEncoder().encode(operation)))
            #expect(try RecordJSONDecoder().decode(SyncOperation.self, from: fast) == operation)
        }
    }

    @Test func `a page is written as the encoder writes it, with and without a position`() throws {
        let pulled = Self.changes().enumerated().map { index, change in
            SyncPulledChange(collection: change.collection, key: change.key, value: change.value,
                             version: SyncServerVersion(Int64(index) - 1), itemVersion: change.itemVersion)
        }
        let pages = [
            SyncPage(changes: pulled, cursor: SyncCursor(counter: 42), hasMore: false),
            SyncPage(changes: pulled, cursor: SyncCursor(counter: 7, position: .init(collection: "a\"b", key: "ä")), hasMore: true),
            SyncPage(changes: [], cursor: .start, hasMore: false),
        ]
        for page in pages {
            let fast = try SyncWireJSON.encode(page)
            #expect(fast == (try RecordJSONEncoder().encode(page)))
            #expect(try RecordJSONDecoder().decode(SyncPage.self, from: fast) == page)
        }
    }
}

extension SyncWireJSONTests {
    @Test func `reading gives what the decoder gives, from the fast form and from any other`() throws {
        let operation = SyncOperation(device: "d", sequence: 1, predecessor: .firstOfDevice, changes: Self.changes())
        let request = RelayWire.PushRequest(space: "alice", operations: [operation, operation])
        let pulled = Self.changes().map {
            SyncPulledChange(
                collection: $0.collection, key: $0.key, value: $0.value, version: SyncServerVersion(3),
                itemVersion: $0.itemVersion)
        }
        let page = SyncPage(changes: pulled, cursor: SyncCursor(counter: 3, position: .init(collection: "c", key: "k")), hasMore: true)
        let foundation = RecordCoding.makeFoundationEncoder(userInfo: [:])
        foundation.outputFormatting.insert(.prettyPrinted)  // whitespace: not the fast form
        for body in [try RecordJSONEncoder().encode(request), try foundation.encode(request)] {
            #expect(try SyncWireJSON.decodePush(body).operations == request.operations)
            #expect(try SyncWireJSON.decodePush(body).space == "alice")
        }
        for body in [try RecordJSONEncoder().encode(page), try foundation.encode(page)] {
            #expect(try SyncWireJSON.decodePage(body) == page)
        }
    }

    @Test func `a body that is not a push or a page fails as it fails in the decoder, and one the decoder accepts is read as it reads it`() throws {
        let good = String(decoding: try SyncWireJSON.encode(SyncOperation(device: "d", sequence: 1, changes: Self.changes())), as: UTF8.self)
        let bodies = [
            "", "{", #"{"operations":[{"changes":[{"collection":"a"}]}]}"#,
            #"{"operations":["# + good.replacingOccurrences(of: "lastWriterWins", with: "sometimes") + "]}",
            #"{"operations":["# + good.replacingOccurrences(of: #""_0":""#, with: #""_0":"!"#) + "]}",
            #"{"operations":["# + good + #"],"space":7}"#,
            #"{"operations":["# + good + ",]}",
        ]
        for body in bodies {
            let expected = Result { try RecordJSONDecoder().decode(RelayWire.PushRequest.self, from: Data(body.utf8)) }
            let fast = Result { try SyncWireJSON.decodePush(Data(body.utf8)) }
            switch (expected, fast) {
            case (.success(let expected), .success(let fast)):
                #expect(fast.operations == expected.operations && fast.space == expected.space, "\(body)")
            case (.failure(let expected), .failure(let fast)):
                #expect(String(describing: fast) == String(describing: expected))
            default:
                Issue.record("the fast reader and the decoder disagree on \(body)")
            }
        }
    }
}

extension SyncWireJSONTests {
    @Test func `payloads of every length are written as Foundation writes their base64 and read back`() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let payload = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            var written: [UInt8] = []
            StrictBase64.append(payload, to: &written)
            #expect(Data(written) == payload.base64EncodedData(), "length \(length)")
            let read = written.withUnsafeBufferPointer { StrictBase64.decode($0) }
            #expect(read == payload, "length \(length)")
            let page = SyncPage(
                changes: [SyncPulledChange(collection: "c", key: "k", value: .payload(payload), version: SyncServerVersion(1))],
                cursor: SyncCursor(counter: 1), hasMore: false)
            #expect(try SyncWireJSON.decodePage(try SyncWireJSON.encode(page)) == page)
        }
    }

    @Test func `every group of three bytes is written and read back as Foundation does`() {
        // 4,096 groups whose high and low 12 bits each take every value once.
        var payload = Data()
        for bits in 0..<4096 {
            let group = bits << 12 | (4095 - bits)
            payload.append(contentsOf: [UInt8(group >> 16), UInt8(group >> 8 & 0xFF), UInt8(group & 0xFF)])
        }
        for trailing in [Data(), Data([0xFF]), Data([0x00, 0xFE])] {
            let bytes = payload + trailing
            var written: [UInt8] = Array("prefix".utf8)
            StrictBase64.append(bytes, to: &written)
            #expect(Data(written.dropFirst(6)) == bytes.base64EncodedData(), "\(trailing.count) trailing")
            #expect(written.dropFirst(6).withUnsafeBufferPointer { StrictBase64.decode($0) } == bytes)
        }
    }

    @Test func `base64 that Foundation does not write is left to the decoder, which reads every form as it always did`() throws {
        let page = SyncPage(
            changes: [SyncPulledChange(collection: "c", key: "k", value: .payload(Data("A".utf8)), version: SyncServerVersion(1))],
            cursor: SyncCursor(counter: 1), hasMore: false)
        let template = String(decoding: try SyncWireJSON.encode(page), as: UTF8.self)
        #expect(template.contains(#""_0":"QQ==""#))
        let texts = ["QR==", "QUI=", "QUJ=", "QQ", "Q===", "====", "QUJD\\/A==", "QU JD", "QUJD=QUJD", "QUJDRA=="]
        for text in texts {
            let canonical = Data(base64Encoded: text).map { $0.base64EncodedString() == text } ?? false
            let fast = Array(text.utf8).withUnsafeBufferPointer { StrictBase64.decode($0) }
            #expect(canonical ? fast == Data(base64Encoded: text) : fast == nil, "\(text)")
            let body = template.replacingOccurrences(of: #""_0":"QQ==""#, with: #""_0":""# + text + #"""#)
            let expected = Result { try RecordJSONDecoder().decode(SyncPage.self, from: Data(body.utf8)) }
            let read = Result { try SyncWireJSON.decodePage(Data(body.utf8)) }
            switch (expected, read) {
            case (.success(let expected), .success(let read)):
                #expect(read == expected, "\(text)")
            case (.failure(let expected), .failure(let read)):
                #expect(String(describing: read) == String(describing: expected), "\(text)")
            default:
                Issue.record("the fast reader and the decoder disagree on \(text)")
            }
        }
    }
}
