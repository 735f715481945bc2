package import Foundation
import RecordKeeperCoding

extension SyncWireJSON {
    /// `RecordJSONDecoder().decode(SyncPage.self, from: data)`, faster for the bytes
    /// ``encode(_:encoder:)-(SyncPage,_)`` writes: the changes are read straight from the bytes
    /// when they are in exactly that form (keys in order, no whitespace, no escapes); anything
    /// else is decoded by the decoder, so the result, and every error, is the decoder's.
    /// `data` may be a slice (a line of an answer of several pages).
    ///
    /// - Throws: what the decoder throws.
    package static func decodePage(_ data: Data) throws -> SyncPage {
        let bytes = [UInt8](data)
        var reader = Reader(bytes: bytes)
        if reader.literal(#"{"changes":["#), let changes = reader.list(of: { $0.pulledChange() }), reader.literal("]") {
            let envelope = Data(#"{"changes":[]"#.utf8) + bytes[reader.index...]
            if var page = try? RecordJSONDecoder().decode(SyncPage.self, from: envelope), page.changes.isEmpty {
                page.changes = changes
                return page
            }
        }
        // A slice of a larger answer is given to the decoder from index 0.
        return try RecordJSONDecoder().decode(SyncPage.self, from: data.startIndex == 0 ? data : Data(bytes))
    }

    /// The offsets (from `data.startIndex`) of the line feeds in `data`: where the pages of an
    /// answer of several pages end. Found with `memchr`: the generic `split` of `Data` cost more
    /// than decoding the pages, and a loop over the bytes a few percent of a pull.
    package static func lineEnds(_ data: Data) -> [Int] {
        data.withUnsafeBytes { bytes in
            var ends: [Int] = []
            guard let base = bytes.baseAddress else { return ends }
            var offset = 0
            while offset < bytes.count, let found = memchr(base + offset, Int32(UInt8(ascii: "\n")), bytes.count - offset) {
                let end = base.distance(to: UnsafeRawPointer(found))
                ends.append(end)
                offset = end + 1
            }
            return ends
        }
    }

    /// `RecordJSONDecoder().decode(RelayWire.PushRequest.self, from: data)`, faster in the same
    /// way as ``decodePage(_:)``: the same result and the same errors.
    ///
    /// - Throws: what the decoder throws.
    package static func decodePush(_ data: Data) throws -> RelayWire.PushRequest {
        let bytes = [UInt8](data)
        var reader = Reader(bytes: bytes)
        if reader.literal(#"{"operations":["#), let operations = reader.list(of: { $0.operation() }), reader.literal("]") {
            let envelope = Data(#"{"operations":[]"#.utf8) + bytes[reader.index...]
            if var request = try? RecordJSONDecoder().decode(RelayWire.PushRequest.self, from: envelope),
                request.operations.isEmpty
            {
                request.operations = operations
                return request
            }
        }
        return try RecordJSONDecoder().decode(RelayWire.PushRequest.self, from: data)
    }

    /// Reads the canonical form only; every method returns nil (or false) at the first byte
    /// that is not of it, and the caller then leaves the body to the decoder.
    struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            guard count > 0 else { return true }
            let start = index
            // Compared in place (the generic `elementsEqual` of slices was the reader's largest cost).
            let matches = bytes.withUnsafeBufferPointer { buffer in
                memcmp(buffer.baseAddress! + start, text.utf8Start, count) == 0
            }
            if matches { index += count }
            return matches
        }

        mutating func list<T>(of element: (inout Reader) -> T?) -> [T]? {
            var items: [T] = []
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return items }
            while true {
                guard let item = element(&self) else { return nil }
                items.append(item)
                guard literal(",") else { return items }
            }
        }

        /// A string without escapes or control characters, valid UTF-8.
        mutating func string() -> String? {
            guard literal("\"") else { return nil }
            let start = index
            let (end, ascii): (Int?, Bool) = bytes.withUnsafeBufferPointer { buffer in
                var ascii = true
                for position in start..<buffer.count {
                    let byte = buffer[position]
                    if byte == UInt8(ascii: "\"") { return (position, ascii) }
                    if byte == UInt8(ascii: "\\") || byte < 0x20 { return (nil, ascii) }
                    if byte >= 0x80 { ascii = false }
                }
                return (nil, ascii)
            }
            guard let end else { return nil }
            index = end + 1
            // ASCII needs no validation; anything else is validated by Foundation.
            return ascii
                ? String(decoding: bytes[start..<end], as: UTF8.self)
                : String(bytes: bytes[start..<end], encoding: .utf8)
        }

        /// An integer without a fraction, exponent or leading zero that fits in an Int64.
        mutating func integer() -> Int64? {
            var negative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            let start = index
            var value: Int64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let digit = Int64(bytes[index] - UInt8(ascii: "0"))
                let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
                if overflow1 || overflow2 { return nil }
                value = sum
                index += 1
            }
            let digits = index - start
            if digits == 0 || (digits > 1 && bytes[start] == UInt8(ascii: "0")) { return nil }
            if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
                return nil
            }
            return value
        }

        mutating func value() -> SyncValue? {
            if literal(#"{"tombstone":{}}"#) { return .tombstone }
            guard literal(#"{"payload":{"_0":"#), let data = base64(), literal("}}") else { return nil }
            return .payload(data)
        }

        /// A string of base64 as Foundation writes it, decoded (``StrictBase64``).
        mutating func base64() -> Data? {
            guard literal("\"") else { return nil }
            let start = index
            return bytes.withUnsafeBufferPointer { buffer in
                guard start < buffer.count, let base = buffer.baseAddress,
                    let quote = memchr(base + start, Int32(UInt8(ascii: "\"")), buffer.count - start)
                else { return nil }
                let end = start + (base + start).distance(to: quote.assumingMemoryBound(to: UInt8.self))
                index = end + 1
                return StrictBase64.decode(UnsafeBufferPointer(rebasing: buffer[start..<end]))
            }
        }

        /// `,"itemVersion":N` when it comes next: `.some(nil)` when absent, nil when malformed.
        mutating func itemVersion() -> Int?? {
            guard literal(#","itemVersion":"#) else { return .some(nil) }
            guard let version = integer(), let itemVersion = Int(exactly: version) else { return nil }
            return .some(itemVersion)
        }

        mutating func pulledChange() -> SyncPulledChange? {
            guard literal(#"{"collection":"#), let collection = string(), let itemVersion = itemVersion(),
                literal(#","key":"#), let key = string(),
                literal(#","value":"#), let value = value(), literal(#","version":"#), let version = integer(),
                literal("}")
            else { return nil }
            return SyncPulledChange(
                collection: collection, key: key, value: value, version: SyncServerVersion(version),
                itemVersion: itemVersion)
        }

        mutating func change() -> SyncChange? {
            guard literal("{") else { return nil }
            var base: SyncServerVersion?
            if literal(#""base":"#) {
                guard let version = integer(), literal(",") else { return nil }
                base = SyncServerVersion(version)
            }
            guard literal(#""collection":"#), let collection = string(), let itemVersion = itemVersion(),
                literal(#","key":"#), let key = string(),
                literal(#","policy":"#), let policyName = string(), let policy = SyncWritePolicy(rawValue: policyName),
                literal(#","value":"#), let value = value(), literal("}")
            else { return nil }
            return SyncChange(
                collection: collection, key: key, value: value, base: base, policy: policy, itemVersion: itemVersion)
        }

        /// An operation: its changes read here, the rest (id, device, …) by the decoder.
        mutating func operation() -> SyncOperation? {
            guard literal(#"{"changes":["#), let changes = list(of: { $0.change() }), literal("]") else { return nil }
            let rest = index
            guard skipObjectRest() else { return nil }
            let envelope = Data(#"{"changes":[]"#.utf8) + bytes[rest..<index]
            guard var operation = try? RecordJSONDecoder().decode(SyncOperation.self, from: envelope),
                operation.changes.isEmpty
            else { return nil }
            operation.changes = changes
            return operation
        }

        /// Moves past the `}` that closes the object being read (strings and nesting skipped).
        mutating func skipObjectRest() -> Bool {
            var depth = 1
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                        index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    index += 1
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return byte == UInt8(ascii: "}") }
                default:
                    break
                }
            }
            return false
        }
    }
}
