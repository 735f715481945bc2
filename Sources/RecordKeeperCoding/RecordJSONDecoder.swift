public import Foundation

/// A JSON decoder for record payloads, the counterpart of ``RecordJSONEncoder``: it reads
/// what Foundation's `JSONDecoder` reads with ``RecordCoding``'s settings (`.deferredToDate`,
/// `.base64`, non-finite numbers rejected), straight from the payload bytes, several times
/// faster.
///
/// It validates the whole payload in one pass and lays its values out on a reusable tape (no
/// `JSONSerialization` tree, no `[String: Any]`), matches keys by comparing bytes (no `String`
/// per key unless the key is escaped), and reads numbers without making strings for the
/// common forms. Reuse one instance for many records; it is not thread-safe.
///
/// ```swift
/// let decoder = RecordJSONDecoder()
/// let books = try payloads.map { try decoder.decode(Book.self, from: $0) }
/// ```
///
/// It accepts whitespace, escapes (including surrogate pairs), a byte order mark, trailing
/// commas and numbers in every JSON form; an integer type accepts a number with a fraction or
/// exponent when its value is a whole number that fits (`1.0`, `1e2`), as Foundation does.
/// Errors are `DecodingError` with the coding path of the failing value; invalid JSON is
/// `DecodingError.dataCorrupted` naming the byte offset. Nesting is limited to 512 levels.
///
/// Dates and keys follow the strategies it was made with. What it does not do, by design:
/// other data or float strategies, custom date or key strategies, JSON5, and
/// UTF-16 or UTF-32 payloads (the first byte is checked: such payloads are handed to
/// Foundation's `JSONDecoder`). Keys are matched by their UTF-8 bytes, so a key stored in a
/// different Unicode normalization than the coding key's string does not match. Of a key that
/// appears twice in an object, the first is used, as in Foundation. `Data` is read from
/// canonical base64 only (padding only at the end, unused bits zero): Foundation's
/// `Data(base64Encoded:)` on Linux reads `"===="` as a zero byte, which this decoder refuses.
public final class RecordJSONDecoder {
    /// Values a type's `init(from:)` can read from `decoder.userInfo`.
    public let userInfo: [CodingUserInfoKey: any Sendable]
    /// How it reads dates and keys.
    public let strategies: RecordCoding.Strategies
    let state: DecodingState
    private lazy var foundation = RecordCoding.makeFoundationDecoder(userInfo: userInfo, strategies: strategies)
    /// The `Decoder` the values see, reused from one record to the next.
    private var reusable: RecordDecoderCore?

    /// Creates a decoder; `userInfo` is passed to the values it decodes. `dates` and `keys`
    /// choose Foundation's date and key strategies (`.snakeCase` reads with
    /// `.convertFromSnakeCase`); it reads what `JSONDecoder` with the same strategies reads.
    public init(
        userInfo: [CodingUserInfoKey: any Sendable] = [:], dates: RecordCoding.DateStrategy = .deferredToDate,
        keys: RecordCoding.KeyStrategy = .useDefaultKeys
    ) {
        self.userInfo = userInfo
        self.strategies = RecordCoding.Strategies(dates: dates, keys: keys)
        self.state = DecodingState(userInfo: userInfo, strategies: strategies)
    }

    /// A decoder with `strategies`.
    public convenience init(userInfo: [CodingUserInfoKey: any Sendable] = [:], strategies: RecordCoding.Strategies) {
        self.init(userInfo: userInfo, dates: strategies.dates, keys: strategies.keys)
    }

    /// The value of type `T` in `data`.
    /// - Throws: `DecodingError` (with the coding path) when `data` is not valid JSON or not
    ///   a valid `T`; any error `T`'s own `init(from:)` throws.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try data.withUnsafeBytes { raw in try decode(type, fromBytes: raw, data: data) }
    }

    /// The value of type `T` in `raw` (borrowed for the call; no copy is made), as
    /// ``decode(_:from:)``. `data` is the same bytes when the caller has them as `Data`.
    package func decode<T: Decodable>(_ type: T.Type, fromBytes raw: UnsafeRawBufferPointer, data: Data? = nil) throws -> T {
        if state.isBusy {
            return try RecordJSONDecoder(userInfo: userInfo, strategies: strategies).decode(type, fromBytes: raw, data: data)
        }
        state.isBusy = true
        defer { state.isBusy = false }
        let bytes = raw.bindMemory(to: UInt8.self)
        if bytes.count >= 2, bytes[0] == 0 || bytes[1] == 0 || bytes[0] == 0xFE || bytes[0] == 0xFF {
            return try foundation.decode(type, from: data ?? Data(raw))  // UTF-16 or UTF-32
        }
        return try decode(type, bytes: bytes)
    }

    private func decode<T: Decodable>(_ type: T.Type, bytes: UnsafeBufferPointer<UInt8>) throws -> T {
        var parser = JSONTapeParser(bytes: bytes, syntax: .foundationCompatible)
        swap(&parser.tape, &state.tape)  // move: the parser owns the buffer uniquely and reuses it
        parser.tape.removeAll(keepingCapacity: true)
        do {
            try parser.parse()
        } catch {
            state.tape = parser.tape
            let position = error.position(in: bytes)
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: [],
                debugDescription: "The given data was not valid JSON: \(error.reason) at byte \(error.offset) "
                    + "(line \(position.line), column \(position.column)).",
                underlyingError: error))
        }
        state.tape = parser.tape
        return try state.tape.withUnsafeBufferPointer { tape in
            state.begin()
            defer { state.end() }
            let core = makeCore(bytes: bytes, tape: tape)
            return try core.decodeValue(type, at: 0, depth: 0, extra: [], key: nil)
        }
    }

    private func makeCore(bytes: UnsafeBufferPointer<UInt8>, tape: UnsafeBufferPointer<TapeEntry>) -> RecordDecoderCore {
        if let reusable {
            reusable.bytes = bytes
            reusable.tape = tape
            reusable.generation = state.generation
            reusable.index = 0
            reusable.depth = 0
            reusable.extra = []
            return reusable
        }
        let core = RecordDecoderCore(state: state, bytes: bytes, tape: tape, index: 0, depth: 0, extra: [])
        reusable = core
        return core
    }
}

/// What one `RecordJSONDecoder` keeps between records: the tape, the buffer escaped strings
/// are unescaped into, the coding path, and the reusable `Decoder`.
final class DecodingState {
    var tape: [TapeEntry] = []
    var scratch: [UInt8] = []
    var path: [any CodingKey] = []
    /// Changes after every decode: a container or decoder kept past its decode sees that it
    /// is stale and throws instead of reading released memory.
    private(set) var generation = 0
    let userInfo: [CodingUserInfoKey: any Sendable]
    /// Whether a decode is running (a type that decodes another payload with the same
    /// decoder from its `init(from:)` gets a fresh decoder for it).
    var isBusy = false
    let dates: RecordCoding.DateStrategy
    /// The snake-case conversion, or nil for `.useDefaultKeys`.
    let snakeCase: SnakeCaseKeys?

    init(userInfo: [CodingUserInfoKey: any Sendable], strategies: RecordCoding.Strategies = .default) {
        self.userInfo = userInfo
        self.dates = strategies.dates
        self.snakeCase = strategies.keys == .snakeCase ? SnakeCaseKeys() : nil
    }

    func begin() {
        generation &+= 1
        path.removeAll(keepingCapacity: true)
    }

    func end() {
        generation &+= 1
    }

    /// The coding path of a container at `depth` with `extra` keys, plus `key`.
    func path(depth: Int, extra: [any CodingKey], key: (any CodingKey)?) -> [any CodingKey] {
        var result = Array(path.prefix(depth))
        result.append(contentsOf: extra)
        if let key { result.append(key) }
        return result
    }
}
