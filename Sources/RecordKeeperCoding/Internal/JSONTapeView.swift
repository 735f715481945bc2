/// A parsed value and the text it was parsed from, both borrowed: what a reader of the tape
/// other than `RecordJSONDecoder` (the `recordkeeper` tool) reads values through.
package struct JSONTapeView {
    /// The text the tape was parsed from.
    package let bytes: UnsafeBufferPointer<UInt8>
    /// The parsed values; an entry's offsets are offsets in ``bytes``.
    package let tape: UnsafeBufferPointer<TapeEntry>

    /// A view of `tape`, parsed from `bytes`.
    package init(bytes: UnsafeBufferPointer<UInt8>, tape: UnsafeBufferPointer<TapeEntry>) {
        self.bytes = bytes
        self.tape = tape
    }

    /// The entry at `index` of the tape.
    package subscript(index: Int) -> TapeEntry { tape[index] }

    /// The text of the string at `entry`, its escapes resolved.
    package func string(at entry: Int) -> String {
        let value = tape[entry]
        let raw = UnsafeBufferPointer(rebasing: bytes[Int(value.start)..<Int(value.end)])
        guard value.flag else { return String(decoding: raw, as: UTF8.self) }
        var unescaped: [UInt8] = []
        unescaped.reserveCapacity(raw.count)
        JSONUnescaper.unescape(raw, into: &unescaped)
        return String(decoding: unescaped, as: UTF8.self)
    }

    /// Calls `body` with the entries of each member's key and value of the object at `entry`,
    /// in document order.
    package func forEachMember(of entry: Int, _ body: (_ key: Int, _ value: Int) throws -> Void) rethrows {
        var index = entry + 1
        for _ in 0..<Int(tape[entry].count) {
            let value = index + 1
            try body(index, value)
            index = Int(tape[value].next)
        }
    }

    /// Calls `body` with the entry of each element of the array at `entry`, in order.
    package func forEachElement(of entry: Int, _ body: (_ element: Int) throws -> Void) rethrows {
        var index = entry + 1
        for _ in 0..<Int(tape[entry].count) {
            try body(index)
            index = Int(tape[index].next)
        }
    }

    /// Appends the compact form of the value at `entry` to `out`: its text without the
    /// whitespace between tokens, everything else byte for byte (numbers keep their spelling,
    /// strings their escapes).
    package func appendCompactText(of entry: Int, to out: inout [UInt8]) {
        let value = tape[entry]
        switch value.kind {
        case .object:
            out.append(UInt8(ascii: "{"))
            var first = true
            forEachMember(of: entry) { key, member in
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                appendCompactText(of: key, to: &out)
                out.append(UInt8(ascii: ":"))
                appendCompactText(of: member, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array:
            out.append(UInt8(ascii: "["))
            var first = true
            forEachElement(of: entry) { element in
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                appendCompactText(of: element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .string:
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[Int(value.start)..<Int(value.end)]))
            out.append(UInt8(ascii: "\""))
        case .number, .trueValue, .falseValue, .null:
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[Int(value.start)..<Int(value.end)]))
        }
    }
}

extension JSONTapeParser {
    /// The compact form (``JSONTapeView/appendCompactText(of:to:)``) of `bytes`, which must be
    /// one JSON value of `syntax`, with whitespace around it and nothing else.
    package static func compactText(of bytes: UnsafeBufferPointer<UInt8>, syntax: JSONSyntax) throws(JSONSyntaxError) -> [UInt8] {
        var parser = JSONTapeParser(bytes: bytes, syntax: syntax)
        try parser.parse()
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        parser.tape.withUnsafeBufferPointer { tape in
            JSONTapeView(bytes: bytes, tape: tape).appendCompactText(of: 0, to: &out)
        }
        return out
    }
}
