import Foundation

/// The `Decoder` the decoded values see. One instance is reused for every nested value (its
/// tape index and depth are swapped in and out around each nested `init(from:)`);
/// `superDecoder` makes separate ones.
final class RecordDecoderCore: Decoder {
    let state: DecodingState
    /// Valid only while `generation == state.generation` (during one decode).
    var bytes: UnsafeBufferPointer<UInt8>
    var tape: UnsafeBufferPointer<TapeEntry>
    var generation: Int
    var index: Int
    var depth: Int
    var extra: [any CodingKey]
    /// The tape index of a `[String: …]` dictionary being decoded under a key strategy: its
    /// keys are data and are not converted (as in Foundation). -1 when there is none.
    var rawKeysObject = -1

    init(state: DecodingState, bytes: UnsafeBufferPointer<UInt8>, tape: UnsafeBufferPointer<TapeEntry>,
         index: Int, depth: Int, extra: [any CodingKey]) {
        self.state = state
        self.bytes = bytes
        self.tape = tape
        self.generation = state.generation
        self.index = index
        self.depth = depth
        self.extra = extra
    }

    var codingPath: [any CodingKey] { state.path(depth: depth, extra: extra, key: nil) }
    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    func checkLive() throws {
        guard generation == state.generation else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: [], debugDescription: "A decoder or container was used after its decode(_:from:) returned."))
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try checkLive()
        try expect(.object, at: index, [String: Any].self, path: codingPath)
        let converting = state.snakeCase != nil && index != rawKeysObject
        return KeyedDecodingContainer(RecordKeyedDecodingContainer<Key>(
            core: self, object: index, depth: depth, extra: extra, converting: converting))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try checkLive()
        try expect(.array, at: index, [Any].self, path: codingPath)
        return RecordUnkeyedDecodingContainer(core: self, array: index, depth: depth, extra: extra)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try checkLive()
        return RecordSingleValueDecodingContainer(core: self, entry: index, depth: depth, extra: extra)
    }

    // MARK: Values

    /// Throws `typeMismatch` (or `valueNotFound` for null) unless the entry is of `kind`.
    @inline(__always)
    func expect(_ kind: TapeEntry.Kind, at entry: Int, _ type: Any.Type, path: @autoclosure () -> [any CodingKey]) throws {
        let found = tape[entry].kind
        guard found == kind else { throw mismatch(type, found, path()) }
    }

    func mismatch(_ type: Any.Type, _ found: TapeEntry.Kind, _ path: [any CodingKey]) -> DecodingError {
        if found == .null {
            return DecodingError.valueNotFound(type, DecodingError.Context(
                codingPath: path, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        }
        let name: String
        switch found {
        case .object: name = "a dictionary"
        case .array: name = "an array"
        case .string: name = "a string"
        case .number: name = "number"
        case .trueValue, .falseValue: name = "bool"
        case .null: name = "null"
        }
        return DecodingError.typeMismatch(type, DecodingError.Context(
            codingPath: path, debugDescription: "Expected to decode \(type) but found \(name) instead."))
    }

    @inline(__always)
    func text(_ entry: TapeEntry) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[Int(entry.start)..<Int(entry.end)])
    }

    func string(at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> String {
        let value = tape[entry]
        guard value.kind == .string else { throw mismatch(String.self, value.kind, path()) }
        return stringValue(value)
    }

    /// The text of a string entry, unescaped (the tape parser validated it).
    func stringValue(_ value: TapeEntry) -> String {
        let raw = text(value)
        guard value.flag else { return String(decoding: raw, as: UTF8.self) }
        state.scratch.removeAll(keepingCapacity: true)
        JSONUnescaper.unescape(raw, into: &state.scratch)
        return String(decoding: state.scratch, as: UTF8.self)
    }

    /// Whether the string entry's text equals `key`, byte for byte after unescaping.
    func keyMatches(_ value: TapeEntry, _ key: String) -> Bool {
        if value.flag { return stringValue(value) == key }
        let raw = text(value)
        guard key.utf8.count == raw.count else { return false }
        let result: Bool? = key.utf8.withContiguousStorageIfAvailable { keyBytes in
            keyBytes.count == raw.count && (raw.isEmpty || memcmp(keyBytes.baseAddress!, raw.baseAddress!, raw.count) == 0)
        }
        return result ?? key.utf8.elementsEqual(raw)
    }

    func bool(at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch tape[entry].kind {
        case .trueValue: return true
        case .falseValue: return false
        case let kind: throw mismatch(Bool.self, kind, path())
        }
    }

    func int(at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> Int {
        let value = tape[entry]
        if value.kind == .number, !value.flag, let result = JSONNumbers.int64(text(value)) {
            return Int(result)
        }
        return try integer(Int.self, at: entry, path: path())
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type, at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> T {
        let value = tape[entry]
        guard value.kind == .number else { throw mismatch(T.self, value.kind, path()) }
        let raw = text(value)
        if !value.flag {
            if T.isSigned {
                if let wide = JSONNumbers.int64(raw), let result = T(exactly: wide) { return result }
            } else {
                if let wide = JSONNumbers.uint64(raw), let result = T(exactly: wide) { return result }
            }
            if T.bitWidth > 64, let result = T(String(decoding: raw, as: UTF8.self)) { return result }
        } else if let double = JSONNumbers.double(raw), double.magnitude < 9_007_199_254_740_992, let result = T(exactly: double) {
            // Below 2^53 a Double holds every integer exactly, as Foundation trusts it.
            return result
        } else if let digits = JSONNumbers.integerDigits(raw), let result = T(digits) {
            // A larger integer written with a fraction or an exponent: read from its digits.
            return result
        }
        throw notRepresentable(raw, T.self, path())
    }

    func double(at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> Double {
        let value = tape[entry]
        guard value.kind == .number else { throw mismatch(Double.self, value.kind, path()) }
        let raw = text(value)
        guard let result = JSONNumbers.double(raw) else { throw notRepresentable(raw, Double.self, path()) }
        return result
    }

    func float(at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let value = tape[entry]
        guard value.kind == .number else { throw mismatch(Float.self, value.kind, path()) }
        let raw = text(value)
        guard let result = JSONNumbers.float(raw) else { throw notRepresentable(raw, Float.self, path()) }
        return result
    }

    func notRepresentable(_ raw: UnsafeBufferPointer<UInt8>, _ type: Any.Type, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(
            codingPath: path,
            debugDescription: "Number \(String(decoding: raw, as: UTF8.self)) does not fit in \(type)."))
    }

    /// The types with a fixed JSON form, decoded without `init(from:)`.
    enum ScalarKind { case none, string, int, double, bool, date, data, decimal, url, float, int64, uint64 }

    @inline(__always)
    static func scalarKind<T>(_ type: T.Type) -> ScalarKind {
        if T.self == String.self { return .string }
        if T.self == Int.self { return .int }
        if T.self == Double.self { return .double }
        if T.self == Bool.self { return .bool }
        if T.self == Date.self { return .date }
        if T.self == Data.self { return .data }
        if T.self == Decimal.self { return .decimal }
        if T.self == URL.self { return .url }
        if T.self == Float.self { return .float }
        if T.self == Int64.self { return .int64 }
        if T.self == UInt64.self { return .uint64 }
        return .none
    }

    /// Decodes a member, element or the top-level value: the types with a fixed JSON form
    /// directly, any other through `init(from:)` with this decoder pointed at `entry`.
    func decodeValue<T: Decodable>(
        _ type: T.Type, at entry: Int, depth: Int, extra: [any CodingKey], key: (any CodingKey)?
    ) throws -> T {
        let kind = Self.scalarKind(T.self)
        if kind != .none {
            return try decodeScalar(kind, as: T.self, at: entry, path: self.state.path(depth: depth, extra: extra, key: key))
        }
        let savedIndex = index, savedDepth = self.depth, savedExtra = self.extra, savedRaw = rawKeysObject
        let savedCount = state.path.count
        if state.snakeCase != nil, T.self is any StringKeyedDictionary.Type { rawKeysObject = entry }
        if !extra.isEmpty { state.path.append(contentsOf: extra) }
        if let key { state.path.append(key) }
        index = entry
        self.depth = state.path.count
        self.extra = []
        defer {
            index = savedIndex
            self.depth = savedDepth
            self.extra = savedExtra
            rawKeysObject = savedRaw
            state.path.removeLast(state.path.count - savedCount)
        }
        return try T(from: self)
    }

    /// The value of a type with a fixed JSON form (`kind` is `scalarKind(T.self)`).
    func decodeScalar<T>(_ kind: ScalarKind, as type: T.Type, at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> T {
        switch kind {
        case .string:
            return unsafeBitCast(try string(at: entry, path: path()), to: T.self)
        case .int:
            return unsafeBitCast(try int(at: entry, path: path()), to: T.self)
        case .double:
            return unsafeBitCast(try double(at: entry, path: path()), to: T.self)
        case .bool:
            return unsafeBitCast(try bool(at: entry, path: path()), to: T.self)
        case .date:
            return unsafeBitCast(try date(at: entry, path: path()), to: T.self)
        case .data:
            let text = try string(at: entry, path: path())
            guard let data = StrictBase64.decode(text) else {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: path(), debugDescription: "Encountered Data is not valid Base64."))
            }
            return unsafeBitCast(data, to: T.self)
        case .decimal:
            let value = tape[entry]
            guard value.kind == .number else { throw mismatch(Decimal.self, value.kind, path()) }
            guard let decimal = JSONNumbers.decimal(text(value)) else { throw notRepresentable(text(value), Decimal.self, path()) }
            return unsafeBitCast(decimal, to: T.self)
        case .url:
            let text = try string(at: entry, path: path())
            guard let url = URL(string: text) else {
                throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: path(), debugDescription: "Invalid URL string."))
            }
            return unsafeBitCast(url, to: T.self)
        case .float:
            return unsafeBitCast(try float(at: entry, path: path()), to: T.self)
        case .int64:
            return unsafeBitCast(try integer(Int64.self, at: entry, path: path()), to: T.self)
        case .uint64:
            return unsafeBitCast(try integer(UInt64.self, at: entry, path: path()), to: T.self)
        case .none:
            preconditionFailure("decodeScalar is only called for scalar kinds")
        }
    }
}

/// Turns the text of an escaped JSON string (validated by `JSONTapeParser`) into UTF-8.
enum JSONUnescaper {
    static func unescape(_ raw: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var index = 0
        while index < raw.count {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                index += 1
                continue
            }
            let code = raw[index + 1]
            index += 2
            switch code {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(raw, index)
                index += 4
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    let low = hex4(raw, index + 2)
                    index += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                appendUTF8(scalar, to: &out)
            default: out.append(code)  // " \ /
            }
        }
    }

    private static func hex4(_ raw: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for position in offset..<(offset + 4) {
            let byte = raw[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            default: digit = UInt32(byte - UInt8(ascii: "A") + 10)
            }
            value = value << 4 | digit
        }
        return value
    }

    private static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | (scalar >> 6)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | (scalar >> 12)))
            out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            out.append(UInt8(0xF0 | (scalar >> 18)))
            out.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }
}

extension RecordDecoderCore {
    /// A date in the decoder's date strategy, as Foundation's `JSONDecoder` reads it.
    func date(at entry: Int, path: @autoclosure () -> [any CodingKey]) throws -> Date {
        switch state.dates {
        case .deferredToDate:
            return Date(timeIntervalSinceReferenceDate: try double(at: entry, path: path()))
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try double(at: entry, path: path()))
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: try double(at: entry, path: path()) / 1000.0)
        case .iso8601:
            let text = try string(at: entry, path: path())
            do {
                return try Date.ISO8601FormatStyle().parse(text)
            } catch {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: path(), debugDescription: "Expected date string to be ISO8601-formatted.",
                    underlyingError: error))
            }
        }
    }
}
