import Foundation

/// One JSON value of a parsed payload, in document order. A member of an object is two
/// entries: its key (a string) and its value.
struct TapeEntry {
    enum Kind: UInt8 { case object, array, string, number, trueValue, falseValue, null }

    var kind: Kind
    /// Strings: the text contains escapes. Numbers: the text has a fraction or an exponent.
    var flag: Bool
    /// Scalars: the byte range of the text (strings without their quotes).
    var start: Int32
    var end: Int32
    /// The index of the entry after this value and everything inside it.
    var next: Int32
    /// Objects: members; arrays: elements.
    var count: Int32
}

/// The reason a payload is not valid JSON, with the byte offset where it was found.
struct JSONSyntaxError: Error {
    var offset: Int
    var reason: String
}

/// Validates a whole UTF-8 JSON payload and lays out its values on a tape, so containers
/// can find members and elements without parsing anything twice.
///
/// Accepts what Foundation's `JSONDecoder` accepts for UTF-8 input: RFC 8259 JSON with
/// surrounding whitespace, a leading byte order mark, and a trailing comma in arrays and
/// objects. Rejects invalid UTF-8 in strings, unescaped control characters, lone
/// surrogate escapes and nesting deeper than ``maximumDepth``.
struct JSONTapeParser {
    static let maximumDepth = 512

    let bytes: UnsafeBufferPointer<UInt8>
    var tape: [TapeEntry]
    var index = 0

    /// A parser for `bytes`; give it a `tape` to reuse (its contents are replaced).
    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        self.tape = []
    }

    mutating func parse() throws(JSONSyntaxError) {
        guard bytes.count < Int(Int32.max) else { throw JSONSyntaxError(offset: 0, reason: "the payload is too large") }
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        try value(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw JSONSyntaxError(offset: index, reason: "unexpected text after the value") }
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) {
        guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unexpected end of data") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try object(depth: depth + 1)
        case UInt8(ascii: "["): try array(depth: depth + 1)
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try literal("true", .trueValue)
        case UInt8(ascii: "f"): try literal("false", .falseValue)
        case UInt8(ascii: "n"): try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw JSONSyntaxError(offset: index, reason: "unexpected character")
        }
    }

    private mutating func append(_ kind: TapeEntry.Kind, flag: Bool = false, start: Int, end: Int) {
        tape.append(TapeEntry(
            kind: kind, flag: flag, start: Int32(truncatingIfNeeded: start), end: Int32(truncatingIfNeeded: end),
            next: Int32(truncatingIfNeeded: tape.count + 1), count: 0))
    }

    private mutating func literal(_ text: StaticString, _ kind: TapeEntry.Kind) throws(JSONSyntaxError) {
        let length = text.utf8CodeUnitCount
        guard index + length <= bytes.count,
              memcmp(bytes.baseAddress! + index, text.utf8Start, length) == 0 else {
            throw JSONSyntaxError(offset: index, reason: "invalid literal")
        }
        append(kind, start: index, end: index + length)
        index += length
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) {
        guard depth <= Self.maximumDepth else { throw JSONSyntaxError(offset: index, reason: "too deeply nested") }
        let entry = tape.count
        append(.object, start: index, end: index)
        index += 1
        var count: Int32 = 0
        skipWhitespace()
        while true {
            guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unexpected end of data in an object") }
            if bytes[index] == UInt8(ascii: "}") { break }
            guard bytes[index] == UInt8(ascii: "\"") else { throw JSONSyntaxError(offset: index, reason: "expected a key") }
            try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw JSONSyntaxError(offset: index, reason: "expected \":\" after a key")
            }
            index += 1
            skipWhitespace()
            try value(depth: depth)
            count += 1
            skipWhitespace()
            guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unexpected end of data in an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
            } else if bytes[index] != UInt8(ascii: "}") {
                throw JSONSyntaxError(offset: index, reason: "expected \",\" or \"}\"")
            }
        }
        index += 1
        tape[entry].end = Int32(truncatingIfNeeded: index)
        tape[entry].next = Int32(truncatingIfNeeded: tape.count)
        tape[entry].count = count
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) {
        guard depth <= Self.maximumDepth else { throw JSONSyntaxError(offset: index, reason: "too deeply nested") }
        let entry = tape.count
        append(.array, start: index, end: index)
        index += 1
        var count: Int32 = 0
        skipWhitespace()
        while true {
            guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unexpected end of data in an array") }
            if bytes[index] == UInt8(ascii: "]") { break }
            try value(depth: depth)
            count += 1
            skipWhitespace()
            guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unexpected end of data in an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
            } else if bytes[index] != UInt8(ascii: "]") {
                throw JSONSyntaxError(offset: index, reason: "expected \",\" or \"]\"")
            }
        }
        index += 1
        tape[entry].end = Int32(truncatingIfNeeded: index)
        tape[entry].next = Int32(truncatingIfNeeded: tape.count)
        tape[entry].count = count
    }

    private mutating func string() throws(JSONSyntaxError) {
        index += 1  // opening quote
        let start = index
        var escaped = false
        while true {
            skipPlainBytes()
            guard index < bytes.count else { throw JSONSyntaxError(offset: start - 1, reason: "unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                try escape()
            } else if byte < 0x20 {
                throw JSONSyntaxError(offset: index, reason: "unescaped control character in a string")
            } else if byte < 0x80 {
                index += 1
            } else {
                try utf8Sequence()
            }
        }
        append(.string, flag: escaped, start: start, end: index)
        index += 1  // closing quote
    }

    /// Skips string bytes that need no attention (printable ASCII other than `"` and `\`),
    /// eight at a time where it can.
    @inline(__always)
    private mutating func skipPlainBytes() {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        while index + 8 <= count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            // A byte is special if it is below 0x20, 0x80 or above, '"' (0x22) or '\\' (0x5C).
            let control = (word &- ones &* 0x20) & ~word
            let quote = ((word ^ (ones &* 0x22)) &- ones) & ~(word ^ (ones &* 0x22))
            let backslash = ((word ^ (ones &* 0x5C)) &- ones) & ~(word ^ (ones &* 0x5C))
            if (control | quote | backslash | word) & highs != 0 { break }
            index += 8
        }
        while index < count {
            let byte = base[index]
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return }
            index += 1
        }
    }

    private mutating func escape() throws(JSONSyntaxError) {
        guard index + 1 < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unterminated escape") }
        switch bytes[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 2
        case UInt8(ascii: "u"):
            let unit = try hex4(at: index + 2)
            index += 6
            if unit >= 0xD800 && unit < 0xDC00 {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw JSONSyntaxError(offset: index, reason: "unpaired surrogate escape")
                }
                let low = try hex4(at: index + 2)
                guard low >= 0xDC00 && low < 0xE000 else { throw JSONSyntaxError(offset: index, reason: "unpaired surrogate escape") }
                index += 6
            } else if unit >= 0xDC00 && unit < 0xE000 {
                throw JSONSyntaxError(offset: index, reason: "unpaired surrogate escape")
            }
        default:
            throw JSONSyntaxError(offset: index, reason: "invalid escape")
        }
    }

    func hex4(at offset: Int) throws(JSONSyntaxError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw JSONSyntaxError(offset: offset, reason: "unterminated escape") }
        var value: UInt32 = 0
        for position in offset..<(offset + 4) {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONSyntaxError(offset: position, reason: "invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// One multi-byte UTF-8 sequence, validated (no overlong forms, surrogates or values
    /// above U+10FFFF).
    private mutating func utf8Sequence() throws(JSONSyntaxError) {
        let lead = bytes[index]
        let length: Int
        var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: throw JSONSyntaxError(offset: index, reason: "invalid UTF-8")
        }
        guard index + length <= bytes.count else { throw JSONSyntaxError(offset: index, reason: "invalid UTF-8") }
        let second = bytes[index + 1]
        guard second >= lower && second <= upper else { throw JSONSyntaxError(offset: index, reason: "invalid UTF-8") }
        for position in (index + 2)..<(index + length) where bytes[position] & 0xC0 != 0x80 {
            throw JSONSyntaxError(offset: index, reason: "invalid UTF-8")
        }
        index += length
    }

    private mutating func number() throws(JSONSyntaxError) {
        let start = index
        var isFloat = false
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw JSONSyntaxError(offset: start, reason: "invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw JSONSyntaxError(offset: start, reason: "invalid number (leading zero)") }
        } else if isDigit(bytes[index]) {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        } else {
            throw JSONSyntaxError(offset: start, reason: "invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isFloat = true
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONSyntaxError(offset: start, reason: "invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isFloat = true
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONSyntaxError(offset: start, reason: "invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        append(.number, flag: isFloat, start: start, end: index)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
}
