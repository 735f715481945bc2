/// Malformed JSON input, with the line and column (1-based) where reading stopped.
struct JSONSyntaxError: Error, Sendable, Equatable {
    let line: Int
    let column: Int
    let message: String
}

/// A small streaming JSON pull parser over a `ByteReader`.
///
/// It reads one value at a time, so a million-record import stays at one buffer of memory.
/// Values are validated against RFC 8259 (UTF-8, escapes, surrogate pairs, number grammar) and
/// copied in compact form (whitespace outside strings dropped, everything else byte for byte,
/// so numbers keep their exact spelling). Error messages never quote the input.
final class JSONReader {
    let input: ByteReader
    /// Deeper nesting is refused, which keeps the recursion bounded.
    static let maximumDepth = 256

    init(_ input: ByteReader) {
        self.input = input
    }

    // MARK: Positions and errors

    var line: Int { input.line }
    var column: Int { input.column }

    func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(line: input.line, column: input.column, message: message)
    }

    private func unexpected(_ expectation: String) throws -> JSONSyntaxError {
        try input.peek() == nil
            ? error("unexpected end of input, expected \(expectation)")
            : error("expected \(expectation)")
    }

    // MARK: Whitespace

    func skipWhitespace() throws {
        while let byte = try input.peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            input.advance()
        }
    }

    /// Skips spaces and tabs (and a CR) but not a line feed: for line-based formats.
    func skipSpacesInLine() throws {
        while let byte = try input.peek(), byte == 0x20 || byte == 0x0D || byte == 0x09 {
            input.advance()
        }
    }

    /// The next byte after whitespace, not consumed.
    func peekSignificant() throws -> UInt8? {
        try skipWhitespace()
        return try input.peek()
    }

    func expect(_ byte: UInt8, _ description: String) throws {
        try skipWhitespace()
        guard try input.peek() == byte else { throw try unexpected(description) }
        input.advance()
    }

    // MARK: Structure helpers

    /// Reads an object, calling `member` with each key after its colon; `member` must read the value.
    func readObject(_ member: (String) throws -> Void) throws {
        try expect(UInt8(ascii: "{"), "'{'")
        if try peekSignificant() == UInt8(ascii: "}") {
            input.advance()
            return
        }
        while true {
            guard try peekSignificant() == UInt8(ascii: "\"") else { throw try unexpected("a string key") }
            let key = try readString()
            try expect(UInt8(ascii: ":"), "':' after a key")
            try member(key)
            switch try peekSignificant() {
            case UInt8(ascii: ","): input.advance()
            case UInt8(ascii: "}"): input.advance(); return
            default: throw try unexpected("',' or '}' in an object")
            }
        }
    }

    /// Continues an object whose '{' and first key (and its colon) were already read.
    func readRestOfObject(firstKey: String, _ member: (String) throws -> Void) throws {
        try member(firstKey)
        while true {
            switch try peekSignificant() {
            case UInt8(ascii: ","): input.advance()
            case UInt8(ascii: "}"): input.advance(); return
            default: throw try unexpected("',' or '}' in an object")
            }
            guard try peekSignificant() == UInt8(ascii: "\"") else { throw try unexpected("a string key") }
            let key = try readString()
            try expect(UInt8(ascii: ":"), "':' after a key")
            try member(key)
        }
    }

    /// Reads an array, calling `element` for each element; `element` must read it.
    func readArray(_ element: () throws -> Void) throws {
        try expect(UInt8(ascii: "["), "'['")
        if try peekSignificant() == UInt8(ascii: "]") {
            input.advance()
            return
        }
        while true {
            try element()
            switch try peekSignificant() {
            case UInt8(ascii: ","): input.advance()
            case UInt8(ascii: "]"): input.advance(); return
            default: throw try unexpected("',' or ']' in an array")
            }
        }
    }

    // MARK: Strings

    /// Reads a string and decodes its escapes.
    func readString() throws -> String {
        try skipWhitespace()
        guard try input.peek() == UInt8(ascii: "\"") else { throw try unexpected("a string") }
        var raw: [UInt8] = []
        try copyString(into: &raw)
        return Self.decodeValidatedString(raw)
    }

    /// Decodes a string literal already validated by `copyString` (quotes included).
    static func decodeValidatedString(_ raw: [UInt8]) -> String {
        guard raw.contains(UInt8(ascii: "\\")) else {
            return String(decoding: raw[1..<(raw.count - 1)], as: UTF8.self)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.count)
        var index = 1
        let last = raw.count - 1
        func hex(at start: Int) -> UInt32 {
            var value: UInt32 = 0
            for byte in raw[start..<(start + 4)] {
                value = value << 4 | UInt32(hexValue(byte) ?? 0)
            }
            return value
        }
        while index < last {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\") else {
                bytes.append(byte)
                index += 1
                continue
            }
            let escape = raw[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex(at: index)
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    let low = hex(at: index + 2)
                    index += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                bytes.append(contentsOf: String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8)
            default: bytes.append(escape)  // '"', '\\', '/'
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Validates a string literal at the current position and appends it, quotes included and
    /// escapes unchanged, to `out`.
    func copyString(into out: inout [UInt8]) throws {
        guard try input.next() == UInt8(ascii: "\"") else { throw try unexpected("'\"'") }
        out.append(UInt8(ascii: "\""))
        while true {
            guard let byte = try input.peek() else { throw error("unexpected end of input inside a string") }
            switch byte {
            case UInt8(ascii: "\""):
                input.advance()
                out.append(byte)
                return
            case UInt8(ascii: "\\"):
                try copyEscape(into: &out)
            case 0x00..<0x20:
                throw error("control character in a string must be escaped")
            case 0x20..<0x80:
                input.advance()
                out.append(byte)
            default:
                try copyUTF8Sequence(into: &out)
            }
        }
    }

    private func copyEscape(into out: inout [UInt8]) throws {
        input.advance()
        out.append(UInt8(ascii: "\\"))
        guard let escape = try input.peek() else { throw error("unexpected end of input inside a string") }
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            input.advance()
            out.append(escape)
        case UInt8(ascii: "u"):
            input.advance()
            out.append(escape)
            let unit = try copyHexQuad(into: &out)
            if (0xDC00...0xDFFF).contains(unit) {
                throw error("unpaired surrogate in a \\u escape")
            }
            if (0xD800...0xDBFF).contains(unit) {
                guard try input.next() == UInt8(ascii: "\\"), try input.next() == UInt8(ascii: "u") else {
                    throw error("unpaired surrogate in a \\u escape")
                }
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "u"))
                let low = try copyHexQuad(into: &out)
                guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in a \\u escape") }
            }
        default:
            throw error("invalid escape sequence in a string")
        }
    }

    private func copyHexQuad(into out: inout [UInt8]) throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = try input.peek(), let digit = Self.hexValue(byte) else {
                throw error("a \\u escape needs four hexadecimal digits")
            }
            input.advance()
            out.append(byte)
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// One multi-byte UTF-8 sequence, checked for overlong forms, surrogates and range.
    private func copyUTF8Sequence(into out: inout [UInt8]) throws {
        let invalid = error("invalid UTF-8 in a string")
        guard let lead = try input.next() else { throw invalid }
        out.append(lead)
        let count: Int
        var range: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: count = 1
        case 0xE0: count = 2; range = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: count = 2
        case 0xED: count = 2; range = 0x80...0x9F
        case 0xF0: count = 3; range = 0x90...0xBF
        case 0xF1...0xF3: count = 3
        case 0xF4: count = 3; range = 0x80...0x8F
        default: throw invalid
        }
        for index in 0..<count {
            guard let byte = try input.peek(), (index == 0 ? range : 0x80...0xBF).contains(byte) else { throw invalid }
            input.advance()
            out.append(byte)
        }
    }

    // MARK: Values

    /// Validates one value and appends its compact form to `out`.
    func readValue(into out: inout [UInt8]) throws {
        try readValue(into: &out, depth: 0)
    }

    /// Validates and skips one value.
    func skipValue() throws {
        var scratch: [UInt8] = []
        try readValue(into: &scratch)
    }

    private func readValue(into out: inout [UInt8], depth: Int) throws {
        guard let byte = try peekSignificant() else { throw error("unexpected end of input, expected a value") }
        switch byte {
        case UInt8(ascii: "{"):
            guard depth < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
            input.advance()
            out.append(byte)
            if try peekSignificant() == UInt8(ascii: "}") {
                input.advance()
                out.append(UInt8(ascii: "}"))
                return
            }
            while true {
                guard try peekSignificant() == UInt8(ascii: "\"") else { throw try unexpected("a string key") }
                try copyString(into: &out)
                try expect(UInt8(ascii: ":"), "':' after a key")
                out.append(UInt8(ascii: ":"))
                try readValue(into: &out, depth: depth + 1)
                let separator = try peekSignificant()
                guard separator == UInt8(ascii: ",") || separator == UInt8(ascii: "}") else {
                    throw try unexpected("',' or '}' in an object")
                }
                input.advance()
                out.append(separator!)
                if separator == UInt8(ascii: "}") { return }
            }
        case UInt8(ascii: "["):
            guard depth < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
            input.advance()
            out.append(byte)
            if try peekSignificant() == UInt8(ascii: "]") {
                input.advance()
                out.append(UInt8(ascii: "]"))
                return
            }
            while true {
                try readValue(into: &out, depth: depth + 1)
                let separator = try peekSignificant()
                guard separator == UInt8(ascii: ",") || separator == UInt8(ascii: "]") else {
                    throw try unexpected("',' or ']' in an array")
                }
                input.advance()
                out.append(separator!)
                if separator == UInt8(ascii: "]") { return }
            }
        case UInt8(ascii: "\""):
            try copyString(into: &out)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try copyNumber(into: &out)
        case UInt8(ascii: "t"):
            try copyLiteral("true", into: &out)
        case UInt8(ascii: "f"):
            try copyLiteral("false", into: &out)
        case UInt8(ascii: "n"):
            try copyLiteral("null", into: &out)
        default:
            throw error("expected a JSON value")
        }
    }

    private func copyLiteral(_ literal: StaticString, into out: inout [UInt8]) throws {
        let start = error("invalid literal, expected \(literal)")
        for expected in UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount) {
            guard try input.peek() == expected else { throw start }
            input.advance()
            out.append(expected)
        }
    }

    private func copyNumber(into out: inout [UInt8]) throws {
        func isDigit(_ byte: UInt8?) -> Bool {
            guard let byte else { return false }
            return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }
        func copyDigits() throws {
            guard isDigit(try input.peek()) else { throw error("invalid number, expected a digit") }
            while let byte = try input.peek(), isDigit(byte) {
                input.advance()
                out.append(byte)
            }
        }
        if try input.peek() == UInt8(ascii: "-") {
            input.advance()
            out.append(UInt8(ascii: "-"))
        }
        if try input.peek() == UInt8(ascii: "0") {
            input.advance()
            out.append(UInt8(ascii: "0"))
            if isDigit(try input.peek()) { throw error("invalid number, leading zero") }
        } else {
            try copyDigits()
        }
        if try input.peek() == UInt8(ascii: ".") {
            input.advance()
            out.append(UInt8(ascii: "."))
            try copyDigits()
        }
        if let byte = try input.peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            input.advance()
            out.append(byte)
            if let sign = try input.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                input.advance()
                out.append(sign)
            }
            try copyDigits()
        }
    }
}
