import RecordKeeperCoding

/// Malformed JSON input, with the line and column (1-based) where it was found.
struct JSONInputError: Error, Sendable, Equatable {
    let line: Int
    let column: Int
    let message: String

    init(_ message: String, at position: JSONTextPosition) {
        self.line = position.line
        self.column = position.column
        self.message = message
    }
}

/// JSON text read from a `ByteReader` in bounded pieces, for documents too large to hold.
///
/// Values are parsed with the codec's tape parser (`JSONTapeParser`, ``JSONSyntax/strict``:
/// RFC 8259, no trailing commas, at most 256 levels), each whole: a record's value, a key, an
/// NDJSON line. Only the few levels of a document around them (an export's collections, a
/// change set's members) are walked here, token by token, so that a million-record export is
/// never in memory at once: the window holds the value being parsed and one piece of input.
///
/// Positions are byte offsets into the input; a line and column is counted only for an error
/// (and for the bytes a window lets go, once). Error messages never quote the input.
final class JSONStream {
    /// A place in the input, cheap to take; ``error(_:at:)`` turns it into a line and column
    /// as long as nothing after it has been read.
    struct Mark {
        fileprivate let offset: Int
    }

    /// How errors name the input: a path or "standard input".
    let name: String
    private let reader: ByteReader
    private let pieceSize: Int
    // The stream is used from one place at a time (it is not Sendable) and these are touched
    // for each byte between values: no runtime exclusivity checks on them (as in ByteReader).
    @exclusivity(unchecked) private var window: [UInt8] = []
    /// The next unread byte and the end of the read bytes, in `window`.
    @exclusivity(unchecked) private var position = 0
    @exclusivity(unchecked) private var end = 0
    @exclusivity(unchecked) private var readerIsAtEnd = false
    /// The input offset of `window[0]`.
    private var windowOffset = 0
    /// An input offset the window keeps bytes from while reading ahead.
    private var pinnedOffset: Int?
    /// The last line and column counted, and the input offset it belongs to.
    private var counted = (offset: 0, position: JSONTextPosition())
    private var tape: [TapeEntry] = []

    /// A stream over `reader`, reading `pieceSize` bytes at a time.
    init(_ reader: ByteReader, pieceSize: Int = 1 << 16) {
        self.reader = reader
        self.name = reader.name
        self.pieceSize = pieceSize
    }

    /// How many bytes the window holds now: the piece read last and the value being parsed.
    var windowCapacity: Int { window.count }

    // MARK: Positions and errors

    /// The current place.
    var mark: Mark { Mark(offset: windowOffset + position) }

    /// The line and column of `mark`, which must not be before the window.
    func textPosition(of mark: Mark) -> JSONTextPosition {
        precondition(mark.offset >= windowOffset, "a position the window no longer holds")
        if counted.offset > mark.offset || counted.offset < windowOffset {
            counted = (windowOffset, countedAtWindowStart)
        }
        window.withUnsafeBufferPointer { bytes in
            let span = UnsafeBufferPointer(rebasing: bytes[(counted.offset - windowOffset)..<(mark.offset - windowOffset)])
            counted = (mark.offset, counted.position.advanced(over: span))
        }
        return counted.position
    }

    /// The line and column of `window[0]`.
    private var countedAtWindowStart = JSONTextPosition()

    /// An error at the current place.
    func error(_ message: String) -> JSONInputError {
        JSONInputError(message, at: textPosition(of: mark))
    }

    /// An error at `mark`.
    func error(_ message: String, at mark: Mark) -> JSONInputError {
        JSONInputError(message, at: textPosition(of: mark))
    }

    private func unexpected(_ expectation: String) throws -> JSONInputError {
        try peek() == nil
            ? error("unexpected end of input, expected \(expectation)")
            : error("expected \(expectation)")
    }

    // MARK: Bytes

    /// The next byte without consuming it; nil at the end of the input.
    @inline(__always)
    func peek() throws(ToolError) -> UInt8? {
        if position < end { return window[position] }
        guard try readMore() else { return nil }
        return window[position]
    }

    /// Consumes the byte `peek()` returned.
    @inline(__always)
    func advance() {
        position += 1
    }

    /// Reads the next piece of input into the window, letting go of the bytes before the
    /// current place (or the pinned one); false at the end of the input.
    private func readMore() throws(ToolError) -> Bool {
        guard !readerIsAtEnd else { return false }
        let keep = min(position, (pinnedOffset ?? Int.max) - windowOffset)
        if keep > 0 {
            countedAtWindowStart = textPosition(of: Mark(offset: windowOffset + keep))
            window.withUnsafeMutableBufferPointer { bytes in
                guard let base = bytes.baseAddress else { return }
                base.update(from: base + keep, count: end - keep)
            }
            windowOffset += keep
            position -= keep
            end -= keep
        }
        if window.count - end < pieceSize {
            window.append(contentsOf: repeatElement(0, count: pieceSize - (window.count - end)))
        }
        let count = try reader.read(into: &window, end..<(end + pieceSize))
        if count == 0 { readerIsAtEnd = true }
        end += count
        return count > 0
    }

    /// Runs `body`, then goes back to where it started: what it reads stays in the window.
    func lookingAhead<T>(_ body: () throws -> T) throws -> T {
        let start = mark.offset
        pinnedOffset = start
        defer {
            pinnedOffset = nil
            position = start - windowOffset
        }
        return try body()
    }

    /// Skips a UTF-8 byte-order mark at the very start of the input: editors and PowerShell
    /// write one, and RFC 8259 (§8.1) lets a parser ignore it.
    func skipByteOrderMark() throws {
        guard mark.offset == 0, try peek() == 0xEF else { return }
        let isMark = try lookingAhead { () throws -> Bool in
            advance()
            guard try peek() == 0xBB else { return false }
            advance()
            return try peek() == 0xBF
        }
        if isMark { position += 3 }
    }

    // MARK: Whitespace and punctuation

    func skipWhitespace() throws(ToolError) {
        while let byte = try peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            advance()
        }
    }

    /// The next byte after spaces and tabs (and a CR) but not a line feed, not consumed: for
    /// line-based formats.
    func peekInLine() throws(ToolError) -> UInt8? {
        while let byte = try peek(), byte == 0x20 || byte == 0x0D || byte == 0x09 {
            advance()
        }
        return try peek()
    }

    /// The next byte after whitespace, not consumed.
    func peekSignificant() throws(ToolError) -> UInt8? {
        try skipWhitespace()
        return try peek()
    }

    func expect(_ byte: UInt8, _ description: String) throws {
        try skipWhitespace()
        guard try peek() == byte else { throw try unexpected(description) }
        advance()
    }

    /// Reads an object, calling `member` with each key after its colon; `member` must read the
    /// value.
    func readObject(_ member: (String) throws -> Void) throws {
        try expect(UInt8(ascii: "{"), "'{'")
        if try peekSignificant() == UInt8(ascii: "}") {
            advance()
            return
        }
        while true {
            guard try peekSignificant() == UInt8(ascii: "\"") else { throw try unexpected("a string key") }
            let key = try readString()
            try expect(UInt8(ascii: ":"), "':' after a key")
            try member(key)
            switch try peekSignificant() {
            case UInt8(ascii: ","): advance()
            case UInt8(ascii: "}"): advance(); return
            default: throw try unexpected("',' or '}' in an object")
            }
        }
    }

    /// Reads an array, calling `element` for each element; `element` must read it.
    func readArray(_ element: () throws -> Void) throws {
        try expect(UInt8(ascii: "["), "'['")
        if try peekSignificant() == UInt8(ascii: "]") {
            advance()
            return
        }
        while true {
            try element()
            switch try peekSignificant() {
            case UInt8(ascii: ","): advance()
            case UInt8(ascii: "]"): advance(); return
            default: throw try unexpected("',' or ']' in an array")
            }
        }
    }

    // MARK: Values

    /// A value parsed on the tape, for the body of ``readValue(_:)``.
    struct Value {
        /// The value and its text. Its offsets are offsets in the window, not in the input.
        let view: JSONTapeView
        /// The tape entry of the value itself.
        let entry: Int
        fileprivate let windowOffset: Int

        /// Where the value at `entry` begins, for an error about it.
        func mark(of entry: Int) -> Mark {
            Mark(offset: windowOffset + view[entry].textStart)
        }
    }

    /// Parses the value at the current place (after whitespace) and gives it to `body`, then
    /// consumes it. `body` must not read from the stream: the value borrows its window.
    ///
    /// - Parameter membersAreValues: Whether the value is an object whose members' values are
    ///   the values that may nest 256 levels (a record line), rather than the value itself.
    func readValue<T>(membersAreValues: Bool = false, _ body: (Value) throws -> T) throws -> T {
        try skipWhitespace()
        while true {
            let start = position
            let parsed: Result<Int, JSONSyntaxError> = window.withUnsafeBufferPointer { all in
                var parser = JSONTapeParser(bytes: UnsafeBufferPointer(rebasing: all[0..<end]), syntax: .strict)
                swap(&parser.tape, &tape)  // reuse one tape's storage for every value
                parser.tape.removeAll(keepingCapacity: true)
                defer { swap(&parser.tape, &tape) }
                return Result { () throws(JSONSyntaxError) in
                    try parser.parseValue(at: start, uncountedLevels: membersAreValues ? 1 : 0)
                }
            }
            switch parsed {
            case .success(let valueEnd):
                // A value that ends with the window (a number) may go on in the next piece.
                if valueEnd == end, !readerIsAtEnd {
                    _ = try readMore()
                    continue
                }
                let result = try window.withUnsafeBufferPointer { all in
                    try tape.withUnsafeBufferPointer { entries in
                        let view = JSONTapeView(bytes: UnsafeBufferPointer(rebasing: all[0..<end]), tape: entries)
                        return try body(Value(view: view, entry: 0, windowOffset: windowOffset))
                    }
                }
                position = valueEnd
                return result
            case .failure(let failure):
                if failure.needsMoreInput, !readerIsAtEnd {
                    _ = try readMore()
                    continue
                }
                throw error(failure.reason, at: Mark(offset: windowOffset + failure.offset))
            }
        }
    }

    /// Reads a string and resolves its escapes.
    func readString() throws -> String {
        guard try peekSignificant() == UInt8(ascii: "\"") else { throw try unexpected("a string") }
        return try readValue { $0.view.string(at: $0.entry) }
    }

    /// Validates one value and returns its compact form (whitespace between tokens dropped,
    /// everything else byte for byte, so numbers keep their exact spelling).
    func readCompactValue() throws -> [UInt8] {
        try readValue { value in
            var compact: [UInt8] = []
            value.view.appendCompactText(of: value.entry, to: &compact)
            return compact
        }
    }

    /// The compact form of `bytes`, which must be one JSON value with whitespace around it.
    static func compactValue(_ bytes: [UInt8]) -> Result<[UInt8], JSONSyntaxError> {
        bytes.withUnsafeBufferPointer { text in
            Result { () throws(JSONSyntaxError) in try JSONTapeParser.compactText(of: text, syntax: .strict) }
        }
    }
}
