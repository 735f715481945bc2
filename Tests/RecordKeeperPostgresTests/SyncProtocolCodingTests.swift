import Foundation
import RecordKeeper
import RecordKeeperPostgres
import Testing

/// The protocol types' JSON form is a contract: PostgreSQL stores outcomes in it (the
/// `outcome` column, returned to re-deliveries; the device and sequence are the row's columns),
/// and a relay will carry the types in it. Cursors order as pulls advance.
@Suite struct SyncProtocolCodingTests {
    private func json(_ outcome: SyncOutcome) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(outcome), as: UTF8.self)
    }

    @Test func `stored outcomes keep their JSON form and decode back`() throws {
        let id = try #require(UUID(uuidString: "6F1C0000-0000-4000-8000-000000000001"))
        let cases: [(SyncOutcome, String)] = [
            (
                SyncOutcome(operationID: id, device: "phone", sequence: 7, result: .applied(SyncServerVersion(3))),
                #"{"isRedelivery":false,"operationID":"6F1C0000-0000-4000-8000-000000000001","result":{"applied":{"_0":3}}}"#
            ),
            (
                SyncOutcome(
                    operationID: id, device: "phone", sequence: 7,
                    result: .conflict([
                        SyncConflict(
                            collection: "notes", key: "a", base: SyncServerVersion(1),
                            server: SyncRecordState(value: .payload(Data("A2".utf8)), version: SyncServerVersion(2))),
                        SyncConflict(
                            collection: "notes", key: "b", base: nil,
                            server: SyncRecordState(value: .tombstone, version: SyncServerVersion(4))),
                        SyncConflict(collection: "notes", key: "c", base: SyncServerVersion(9), server: nil),
                    ])),
                #"{"isRedelivery":false,"operationID":"6F1C0000-0000-4000-8000-000000000001","result":{"conflict":{"_0":["#
                    + #"{"base":1,"collection":"notes","key":"a","server":{"value":{"payload":{"_0":"QTI="}},"version":2}},"#
                    + #"{"collection":"notes","key":"b","server":{"value":{"tombstone":{}},"version":4}},"#
                    + #"{"base":9,"collection":"notes","key":"c"}]}}}"#
            ),
            (
                SyncOutcome(
                    operationID: id, device: "phone", sequence: 7, result: .outOfOrder(lastSequence: 5), isRedelivery: true),
                #"{"isRedelivery":true,"operationID":"6F1C0000-0000-4000-8000-000000000001","result":{"outOfOrder":{"lastSequence":5}}}"#
            ),
        ]
        var redelivered = cases[0].0
        redelivered.isRedelivery = true
        #expect(try OutcomeJSON.encode(redelivered) == stored(redelivered))
        for (outcome, expected) in cases {
            #expect(try stored(outcome) == expected)
            #expect(try OutcomeJSON.encode(outcome) == expected, "the server's fast path writes the same form")
            // On the wire, an outcome names its device and sequence too.
            let wire = try json(outcome)
            #expect(wire.contains(#""device":"phone""#) && wire.contains(#""sequence":7"#))
            #expect(try JSONDecoder().decode(SyncOutcome.self, from: Data(wire.utf8)) == outcome)
        }
    }

    /// The stored form: the outcome's JSON without the device and sequence.
    private func stored(_ outcome: SyncOutcome) throws -> String {
        var text = try json(outcome)
        text = text.replacingOccurrences(of: #""device":"\#(outcome.device)","#, with: "")
        return text.replacingOccurrences(of: #","sequence":\#(outcome.sequence)"#, with: "")
    }

    @Test func `an operation names its predecessor, and one without it decodes as unchecked`() throws {
        let id = try #require(UUID(uuidString: "6F1C0000-0000-4000-8000-000000000002"))
        let previous = try #require(UUID(uuidString: "6F1C0000-0000-4000-8000-000000000001"))
        let chained = SyncOperation(
            id: id, device: "phone", sequence: 2, predecessor: .operation(previous),
            changes: [put("notes", "a", "A", base: nil)])
        let encoded = try JSONEncoder().encode(chained)
        #expect(try JSONDecoder().decode(SyncOperation.self, from: encoded) == chained)
        let old = #"{"id":"6F1C0000-0000-4000-8000-000000000002","device":"phone","sequence":2,"changes":[]}"#
        #expect(try JSONDecoder().decode(SyncOperation.self, from: Data(old.utf8)).predecessor == .unchecked)
    }

    @Test func `cursors order as a pull advances`() throws {
        func at(_ counter: Int64, _ collection: String, _ key: String) -> SyncCursor {
            SyncCursor(counter: counter, position: .init(collection: collection, key: key))
        }
        let ordered: [SyncCursor] = [
            .start, at(1, "a", "z"), at(1, "b", "a"), at(1, "b", "b"), SyncCursor(counter: 1),
            at(2, "a", "a"), SyncCursor(counter: 2),
        ]
        for (index, cursor) in ordered.enumerated() {
            for later in ordered[(index + 1)...] {
                #expect(cursor < later, "\(cursor) should precede \(later)")
                #expect(!(later < cursor))
            }
        }
        // Byte order, as PostgreSQL's "C" collation: "Z" < "a" < "é".
        #expect(at(1, "n", "Z") < at(1, "n", "a"))
        #expect(at(1, "n", "a") < at(1, "n", "é"))
        let cursor = at(7, "notes", "k")
        #expect(try JSONDecoder().decode(SyncCursor.self, from: JSONEncoder().encode(cursor)) == cursor)
    }
}
