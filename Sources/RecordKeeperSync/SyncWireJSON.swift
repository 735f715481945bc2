package import Foundation
package import RecordKeeperCoding

/// The JSON of sync changes written straight into bytes, for the relay's bodies: the same
/// bytes as `RecordJSONEncoder` writes for ``SyncChange`` and ``SyncPulledChange`` (keys
/// sorted, `value` as `{"payload":{"_0":"<base64>"}}` or `{"tombstone":{}}`), without going
/// through `Encodable` for each of the thousands of changes a push or a page holds. The
/// envelope around them (an operation's id and device, a page's cursor) still goes through
/// the encoder, and the changes are spliced into its empty `changes` array.
package enum SyncWireJSON {
    /// `RecordJSONEncoder().encode(operation)`, faster.
    ///
    /// - Throws: what the encoder throws for the operation's envelope.
    package static func encode(_ operation: SyncOperation, encoder: RecordJSONEncoder = RecordJSONEncoder()) throws -> Data {
        var envelope = operation
        envelope.changes = []
        return try splice(try encoder.encode(envelope), count: operation.changes.count) { index, out in
            append(operation.changes[index], to: &out)
        }
    }

    /// `RecordJSONEncoder().encode(page)`, faster.
    ///
    /// - Throws: what the encoder throws for the page's envelope.
    package static func encode(_ page: SyncPage, encoder: RecordJSONEncoder = RecordJSONEncoder()) throws -> Data {
        var out: [UInt8] = []
        try append(page, to: &out, encoder: encoder)
        return Data(out)
    }

    /// Appends `RecordJSONEncoder().encode(page)` to `out` (the relay writes the pages of an
    /// answer into one buffer).
    ///
    /// - Throws: what the encoder throws for the page's envelope.
    package static func append(_ page: SyncPage, to out: inout [UInt8], encoder: RecordJSONEncoder = RecordJSONEncoder()) throws {
        var envelope = page
        envelope.changes = []
        try splice(try encoder.encode(envelope), count: page.changes.count, into: &out) { index, out in
            append(page.changes[index], to: &out)
        }
    }

    /// `envelope` is `{"changes":[],…}` (keys sorted: `changes` comes first); the elements go
    /// between its brackets.
    private static func splice(_ envelope: Data, count: Int, element: (Int, inout [UInt8]) -> Void) throws -> Data {
        var out: [UInt8] = []
        try splice(envelope, count: count, into: &out, element: element)
        return Data(out)
    }

    private static func splice(
        _ envelope: Data, count: Int, into out: inout [UInt8], element: (Int, inout [UInt8]) -> Void
    ) throws {
        let head = Array(#"{"changes":["#.utf8)
        guard envelope.starts(with: head), envelope.dropFirst(head.count).first == UInt8(ascii: "]") else {
            throw EncodingError.invalidValue(envelope, EncodingError.Context(
                codingPath: [], debugDescription: "the envelope does not start with an empty changes array"))
        }
        // Room for about 200 bytes an element, growing the buffer at least twofold: an answer
        // of several pages appends page after page to one buffer, and reserving just enough
        // for each would copy everything before it once per page.
        let needed = out.count + envelope.count + count * 200
        if out.capacity < needed { out.reserveCapacity(max(needed, out.capacity * 2)) }
        out.append(contentsOf: head)
        for index in 0..<count {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            element(index, &out)
        }
        out.append(contentsOf: envelope.dropFirst(head.count))
    }

    private static func append(_ change: SyncChange, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let base = change.base {
            JSONWriter.appendASCII(#""base":"#, to: &out)
            JSONWriter.appendInt64(base.rawValue, to: &out)
            out.append(UInt8(ascii: ","))
        }
        JSONWriter.appendASCII(#""collection":"#, to: &out)
        JSONWriter.appendString(change.collection, to: &out)
        appendItemVersion(change.itemVersion, to: &out)
        JSONWriter.appendASCII(#","key":"#, to: &out)
        JSONWriter.appendString(change.key, to: &out)
        JSONWriter.appendASCII(#","policy":"#, to: &out)
        JSONWriter.appendString(change.policy.rawValue, to: &out)
        JSONWriter.appendASCII(#","value":"#, to: &out)
        append(change.value, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    private static func append(_ change: SyncPulledChange, to out: inout [UInt8]) {
        JSONWriter.appendASCII(#"{"collection":"#, to: &out)
        JSONWriter.appendString(change.collection, to: &out)
        appendItemVersion(change.itemVersion, to: &out)
        JSONWriter.appendASCII(#","key":"#, to: &out)
        JSONWriter.appendString(change.key, to: &out)
        JSONWriter.appendASCII(#","value":"#, to: &out)
        append(change.value, to: &out)
        JSONWriter.appendASCII(#","version":"#, to: &out)
        JSONWriter.appendInt64(change.version.rawValue, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// `,"itemVersion":N` (sorted between `collection` and `key`); nothing for nil, as the
    /// synthesized encoding leaves a nil optional out.
    private static func appendItemVersion(_ itemVersion: Int?, to out: inout [UInt8]) {
        guard let itemVersion else { return }
        JSONWriter.appendASCII(#","itemVersion":"#, to: &out)
        JSONWriter.appendInt64(Int64(itemVersion), to: &out)
    }

    private static func append(_ value: SyncValue, to out: inout [UInt8]) {
        switch value {
        case .payload(let data):
            JSONWriter.appendASCII(#"{"payload":{"_0":""#, to: &out)
            StrictBase64.append(data, to: &out)
            JSONWriter.appendASCII(#""}}"#, to: &out)
        case .tombstone:
            JSONWriter.appendASCII(#"{"tombstone":{}}"#, to: &out)
        }
    }
}
