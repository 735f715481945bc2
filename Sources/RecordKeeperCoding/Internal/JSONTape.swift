import Foundation

/// One JSON value of a parsed text, in document order. A member of an object is two entries:
/// its key (a string) and its value.
package struct TapeEntry: Sendable {
    /// What a value is.
    package enum Kind: UInt8, Sendable { case object, array, string, number, trueValue, falseValue, null }

    /// What the value is.
    package var kind: Kind
    /// Strings: the text contains escapes. Numbers: the text has a fraction or an exponent.
    package var flag: Bool
    /// Scalars: the byte range of the text (strings without their quotes). Containers: from
    /// the opening bracket to just after the closing one.
    package var start: Int32
    package var end: Int32
    /// The index of the entry after this value and everything inside it.
    package var next: Int32
    /// Objects: members; arrays: elements.
    package var count: Int32

    /// The offset where the value's text begins: a string's opening quote, a container's
    /// bracket, the first byte of anything else.
    package var textStart: Int { kind == .string ? Int(start) - 1 : Int(start) }
}

/// Which texts a ``JSONTapeParser`` accepts beyond RFC 8259's grammar, and how deeply nested.
package struct JSONSyntax: Sendable, Equatable {
    /// The most containers a value may nest, the value itself included.
    package var maximumDepth: Int
    /// Whether `[1,]` and `{"a":1,}` are accepted.
    package var allowsTrailingCommas: Bool
    /// Whether ``JSONTapeParser/parse()`` skips a UTF-8 byte order mark before the value.
    package var allowsByteOrderMark: Bool

    /// What Foundation's `JSONDecoder` accepts for UTF-8 input, so that `RecordJSONDecoder`
    /// decodes what it decodes: trailing commas, a byte order mark, 512 levels.
    package static let foundationCompatible = JSONSyntax(
        maximumDepth: 512, allowsTrailingCommas: true, allowsByteOrderMark: true)
    /// RFC 8259 and nothing more, nested at most 256 levels: what the `recordkeeper` tool
    /// reads.
    package static let strict = JSONSyntax(maximumDepth: 256, allowsTrailingCommas: false, allowsByteOrderMark: false)
}

/// A line and a column in a text, both counted from 1. Columns count Unicode scalars (UTF-8
/// continuation bytes do not advance them), as editors do.
package struct JSONTextPosition: Sendable, Equatable {
    package var line: Int
    package var column: Int

    /// Line 1, column 1.
    package init(line: Int = 1, column: Int = 1) {
        self.line = line
        self.column = column
    }

    /// The position just after `bytes`, when they begin at this position.
    package func advanced(over bytes: UnsafeBufferPointer<UInt8>) -> JSONTextPosition {
        var lines = 0
        var lastBreak = -1
        for index in bytes.indices where bytes[index] == 0x0A {
            lines += 1
            lastBreak = index
        }
        var scalars = 0
        for index in (lastBreak + 1)..<bytes.count where bytes[index] & 0xC0 != 0x80 {
            scalars += 1
        }
        return lines == 0
            ? JSONTextPosition(line: line, column: column + scalars)
            : JSONTextPosition(line: line + lines, column: 1 + scalars)
    }
}

/// The reason a text is not valid JSON, with the byte offset where it was found.
///
/// The reasons never quote the text (a payload may be secret).
package struct JSONSyntaxError: Error, Sendable, Equatable {
    /// Where the problem is, in bytes from the start of the text given to the parser.
    package var offset: Int
    /// What is wrong, e.g. `expected ':' after a key`.
    package var reason: String
    /// Whether the text ended before the value did, so that more text could complete it: a
    /// reader that holds a part of its input reads more and parses again.
    package var needsMoreInput: Bool

    package init(offset: Int, reason: String, needsMoreInput: Bool = false) {
        self.offset = offset
        self.reason = reason
        self.needsMoreInput = needsMoreInput
    }

    /// The line and column of ``offset`` in `bytes` (the text that was parsed), counted only
    /// when an error is reported.
    package func position(in bytes: UnsafeBufferPointer<UInt8>) -> JSONTextPosition {
        JSONTextPosition().advanced(over: UnsafeBufferPointer(rebasing: bytes[0..<min(offset, bytes.count)]))
    }
}

/// Validates UTF-8 JSON text and lays out its values on a tape, so containers can find members
/// and elements without parsing anything twice.
///
/// Accepts RFC 8259 JSON, and what else its ``JSONSyntax`` allows: `RecordJSONDecoder` parses
/// with ``JSONSyntax/foundationCompatible`` (what Foundation's `JSONDecoder` accepts: a
/// trailing comma, a byte order mark), the `recordkeeper` tool with ``JSONSyntax/strict``.
/// Rejects invalid UTF-8 in strings, unescaped control characters, lone surrogate escapes and
/// nesting deeper than the syntax's maximum depth.
package struct JSONTapeParser {
    /// The text.
    package let bytes: UnsafeBufferPointer<UInt8>
    /// The values parsed so far. Give the parser a tape to reuse by assigning it (its contents
    /// are kept: each value parsed is appended).
    package var tape: [TapeEntry]
    private var index = 0
    private let maximumDepth: Int
    private let allowsTrailingCommas: Bool
    private let allowsByteOrderMark: Bool

    /// A parser for `bytes` that accepts `syntax`.
    package init(bytes: UnsafeBufferPointer<UInt8>, syntax: JSONSyntax) {
        self.bytes = bytes
        self.tape = []
        self.maximumDepth = syntax.maximumDepth
        self.allowsTrailingCommas = syntax.allowsTrailingCommas
        self.allowsByteOrderMark = syntax.allowsByteOrderMark
    }

    /// Parses the whole text: one value, with whitespace (and a byte order mark if allowed)
    /// around it.
    package mutating func parse() throws(JSONSyntaxError) {
        var start = 0
        if allowsByteOrderMark, bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { start = 3 }
        let end = try parseValue(at: start)
        index = end
        skipWhitespace()
        guard index == bytes.count else { throw JSONSyntaxError(offset: index, reason: "unexpected content after the value") }
    }

    /// Parses the one value that starts at `offset` (after whitespace), appends it to the tape
    /// and returns the offset just after it; the text after it is not looked at.
    ///
    /// When `bytes` are only a part of the input, an error that ``JSONSyntaxError/needsMoreInput``
    /// and a value that ends exactly at the end of `bytes` (a number could go on) both mean:
    /// read more, then parse the value again.
    ///
    /// - Parameter uncountedLevels: How many of the outermost containers do not count toward
    ///   the maximum depth: 1 for an object whose members are the values that may nest (a
    ///   line of records).
    package mutating func parseValue(at offset: Int, uncountedLevels: Int = 0) throws(JSONSyntaxError) -> Int {
        guard bytes.count < Int(Int32.max) else { throw JSONSyntaxError(offset: 0, reason: "the text is too large") }
        index = offset
        skipWhitespace()
        try value(depth: -uncountedLevels)
        return index
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

    /// The error for text that ends where `expectation` should be.
    private func endOfInput(_ expectation: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: bytes.count, reason: "unexpected end of input, expected \(expectation)", needsMoreInput: true)
    }

    /// The error for `expectation` not found at `index`: the end of the text or another byte.
    private func unexpected(_ expectation: String) -> JSONSyntaxError {
        index < bytes.count ? JSONSyntaxError(offset: index, reason: "expected \(expectation)") : endOfInput(expectation)
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) {
        guard index < bytes.count else { throw endOfInput("a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try object(depth: depth + 1)
        case UInt8(ascii: "["): try array(depth: depth + 1)
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try literal("true", .trueValue)
        case UInt8(ascii: "f"): try literal("false", .falseValue)
        case UInt8(ascii: "n"): try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw JSONSyntaxError(offset: index, reason: "expected a JSON value")
        }
    }

    private mutating func append(_ kind: TapeEntry.Kind, flag: Bool = false, start: Int, end: Int) {
        tape.append(TapeEntry(
            kind: kind, flag: flag, start: Int32(truncatingIfNeeded: start), end: Int32(truncatingIfNeeded: end),
            next: Int32(truncatingIfNeeded: tape.count + 1), count: 0))
    }

    private mutating func literal(_ text: StaticString, _ kind: TapeEntry.Kind) throws(JSONSyntaxError) {
        let length = text.utf8CodeUnitCount
        let available = min(length, bytes.count - index)
        guard memcmp(bytes.baseAddress! + index, text.utf8Start, available) == 0, available == length else {
            // A literal cut off by the end of the text may be completed by more of it.
            let cutOff = available < length && memcmp(bytes.baseAddress! + index, text.utf8Start, available) == 0
            throw JSONSyntaxError(offset: index, reason: "invalid literal, expected \(text)", needsMoreInput: cutOff)
        }
        append(kind, start: index, end: index + length)
        index += length
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) {
        guard depth <= maximumDepth else {
            throw JSONSyntaxError(offset: index, reason: "nesting deeper than \(maximumDepth) levels")
        }
        let entry = tape.count
        append(.object, start: index, end: index)
        index += 1
        var count: Int32 = 0
        skipWhitespace()
        while true {
            guard index < bytes.count else { throw endOfInput("a string key") }
            if bytes[index] == UInt8(ascii: "}") && (count == 0 || allowsTrailingCommas) { break }
            guard bytes[index] == UInt8(ascii: "\"") else { throw unexpected("a string key") }
            try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw unexpected("':' after a key") }
            index += 1
            skipWhitespace()
            try value(depth: depth)
            count += 1
            skipWhitespace()
            guard index < bytes.count else { throw endOfInput("',' or '}' in an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
            } else if bytes[index] == UInt8(ascii: "}") {
                break
            } else {
                throw unexpected("',' or '}' in an object")
            }
        }
        index += 1
        tape[entry].end = Int32(truncatingIfNeeded: index)
        tape[entry].next = Int32(truncatingIfNeeded: tape.count)
        tape[entry].count = count
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) {
        guard depth <= maximumDepth else {
            throw JSONSyntaxError(offset: index, reason: "nesting deeper than \(maximumDepth) levels")
        }
        let entry = tape.count
        append(.array, start: index, end: index)
        index += 1
        var count: Int32 = 0
        skipWhitespace()
        while true {
            guard index < bytes.count else { throw endOfInput("a value") }
            if bytes[index] == UInt8(ascii: "]") && (count == 0 || allowsTrailingCommas) { break }
            try value(depth: depth)
            count += 1
            skipWhitespace()
            guard index < bytes.count else { throw endOfInput("',' or ']' in an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
            } else if bytes[index] == UInt8(ascii: "]") {
                break
            } else {
                throw unexpected("',' or ']' in an array")
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
            guard index < bytes.count else {
                throw JSONSyntaxError(offset: index, reason: "unexpected end of input inside a string", needsMoreInput: true)
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                try escape()
            } else if byte < 0x20 {
                throw JSONSyntaxError(offset: index, reason: "control character in a string must be escaped")
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

    /// The error for a string the text ends inside of.
    private var endInsideString: JSONSyntaxError {
        JSONSyntaxError(offset: bytes.count, reason: "unexpected end of input inside a string", needsMoreInput: true)
    }

    private func unpairedSurrogate(at offset: Int) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset, reason: "unpaired surrogate in a \\u escape")
    }

    private mutating func escape() throws(JSONSyntaxError) {
        guard index + 1 < bytes.count else { throw endInsideString }
        switch bytes[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 2
        case UInt8(ascii: "u"):
            let unit = try hex4(at: index + 2)
            index += 6
            if unit >= 0xD800 && unit < 0xDC00 {
                guard index < bytes.count else { throw endInsideString }
                guard bytes[index] == UInt8(ascii: "\\") else { throw unpairedSurrogate(at: index) }
                guard index + 1 < bytes.count else { throw endInsideString }
                guard bytes[index + 1] == UInt8(ascii: "u") else { throw unpairedSurrogate(at: index) }
                let low = try hex4(at: index + 2)
                guard low >= 0xDC00 && low < 0xE000 else { throw unpairedSurrogate(at: index + 6) }
                index += 6
            } else if unit >= 0xDC00 && unit < 0xE000 {
                throw unpairedSurrogate(at: index)
            }
        default:
            throw JSONSyntaxError(offset: index + 1, reason: "invalid escape sequence in a string")
        }
    }

    private func hex4(at offset: Int) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for position in offset..<(offset + 4) {
            guard position < bytes.count else {
                throw JSONSyntaxError(offset: position, reason: "a \\u escape needs four hexadecimal digits",
                                      needsMoreInput: true)
            }
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONSyntaxError(offset: position, reason: "a \\u escape needs four hexadecimal digits")
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
        default: throw JSONSyntaxError(offset: index, reason: "invalid UTF-8 in a string")
        }
        for position in (index + 1)..<(index + length) {
            guard position < bytes.count else {
                // Valid so far and cut off by the end of the text: more of it may complete it.
                throw JSONSyntaxError(offset: index, reason: "invalid UTF-8 in a string", needsMoreInput: true)
            }
            let byte = bytes[position]
            let valid = position == index + 1 ? byte >= lower && byte <= upper : byte & 0xC0 == 0x80
            guard valid else { throw JSONSyntaxError(offset: index, reason: "invalid UTF-8 in a string") }
        }
        index += length
    }

    /// The digits of a number's integer part, fraction or exponent: at least one.
    @inline(__always)
    private mutating func digits() throws(JSONSyntaxError) {
        guard index < bytes.count else {
            throw JSONSyntaxError(offset: index, reason: "invalid number, expected a digit", needsMoreInput: true)
        }
        guard isDigit(bytes[index]) else { throw JSONSyntaxError(offset: index, reason: "invalid number, expected a digit") }
        index += 1
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }

    private mutating func number() throws(JSONSyntaxError) {
        let start = index
        var isFloat = false
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        if index < bytes.count, bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) {
                throw JSONSyntaxError(offset: index, reason: "invalid number, leading zero")
            }
        } else {
            try digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isFloat = true
            index += 1
            try digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isFloat = true
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            try digits()
        }
        append(.number, flag: isFloat, start: start, end: index)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
}
