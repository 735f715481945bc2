public import Foundation

/// A JSON encoder for record payloads that writes exactly the bytes of
/// ``RecordCoding/makeFoundationEncoder()`` (Foundation's `JSONEncoder` with `.sortedKeys`,
/// `.withoutEscapingSlashes`, `.deferredToDate`, `.base64` and `.throw` for non-finite
/// floats), several times faster.
///
/// It writes straight into a byte buffer it reuses from one record to the next, keeps its
/// object nodes in a pool, and writes the common types (strings, integers, floating point,
/// booleans, `Date`, `Data`, `Decimal`, `URL`, `UUID`) without boxing them. Reuse one
/// instance for many records; it is not thread-safe (use one per task or actor).
///
/// ```swift
/// let encoder = RecordJSONEncoder()
/// for item in items { payloads[item.id] = try encoder.encode(item) }
/// ```
///
/// Dates and keys follow the strategies it was made with (``RecordCoding/DateStrategy``,
/// ``RecordCoding/KeyStrategy``); what it does not do, by design: other data or float
/// strategies, custom date or key strategies, and other output formats. A value that uses the `Encoder` API in a way
/// the fast path does not support (a container kept and written to after `encode(to:)`
/// returned, or a keyed and an unkeyed container asked of the same encoder) is encoded again
/// by Foundation's `JSONEncoder`, so the bytes are the same either way. `codingPath` is exact
/// for containers used in the usual nested order.
public final class RecordJSONEncoder {
    /// Values a type's `encode(to:)` can read from `encoder.userInfo`.
    public let userInfo: [CodingUserInfoKey: any Sendable]
    /// How it writes dates and keys.
    public let strategies: RecordCoding.Strategies
    let state: EncodingState
    private lazy var encoder = RecordEncoderCore(state: state, node: state.makeNode(), depth: 0)
    private lazy var foundation = RecordCoding.makeFoundationEncoder(userInfo: userInfo, strategies: strategies)

    /// Creates an encoder; `userInfo` is passed to the values it encodes. `dates` and `keys`
    /// choose Foundation's date and key strategies (its defaults unless given); the bytes are
    /// those of `JSONEncoder` with the same strategies and ``RecordCoding``'s other settings.
    ///
    /// ```swift
    /// let encoder = RecordJSONEncoder(dates: .iso8601, keys: .snakeCase)
    /// let payload = try encoder.encode(event)   // {"starts_at":"2026-12-01T09:30:00Z",…}
    /// ```
    public init(
        userInfo: [CodingUserInfoKey: any Sendable] = [:], dates: RecordCoding.DateStrategy = .deferredToDate,
        keys: RecordCoding.KeyStrategy = .useDefaultKeys
    ) {
        self.userInfo = userInfo
        self.strategies = RecordCoding.Strategies(dates: dates, keys: keys)
        self.state = EncodingState(userInfo: userInfo, strategies: strategies)
    }

    /// An encoder with `strategies`.
    public convenience init(userInfo: [CodingUserInfoKey: any Sendable] = [:], strategies: RecordCoding.Strategies) {
        self.init(userInfo: userInfo, dates: strategies.dates, keys: strategies.keys)
    }

    /// The JSON payload of `value`, byte-identical to Foundation's `JSONEncoder` with
    /// ``RecordCoding``'s settings.
    /// - Throws: `EncodingError.invalidValue` for a non-finite float, or for a top-level value
    ///   that encodes nothing; any error the value's own `encode(to:)` throws.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        if state.isBusy {
            // Called again from inside a value's `encode(to:)`: a fresh encoder for that one.
            return try RecordJSONEncoder(userInfo: userInfo, strategies: strategies).encode(value)
        }
        state.isBusy = true
        defer {
            state.isBusy = false
            state.finish()
        }
        state.reset()
        if let scalar = try state.scalar(value, path: []) {
            return try state.serialize(scalar)
        }
        let root = state.makeNode()
        state.noteDictionary(value, in: root)
        let core = encoder
        core.node = root
        core.depth = 0
        core.extra = []
        do {
            try value.encode(to: core)
        } catch {
            // The fast path gave up part-way: Foundation encodes the value instead.
            if state.unsupported { return try foundation.encode(value) }
            throw error
        }
        if state.unsupported {
            return try foundation.encode(value)
        }
        if root.kind == .empty {
            throw EncodingError.invalidValue(value, EncodingError.Context(
                codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        return try state.serialize(.node(root))
    }
}

extension EncodingState {
    /// The value when it is one of the types with a fixed JSON form, else nil.
    func scalar<T: Encodable>(_ value: T, path: @autoclosure () -> [any CodingKey]) throws -> EncodedValue? {
        if T.self == String.self {
            return .string(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            return .signed(Int64(unsafeBitCast(value, to: Int.self)))
        } else if T.self == Double.self {
            return try Self.double(unsafeBitCast(value, to: Double.self), path: path())
        } else if T.self == Bool.self {
            return .bool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == Date.self {
            let date = unsafeBitCast(value, to: Date.self)
            switch dates {
            case .deferredToDate: return try Self.double(date.timeIntervalSinceReferenceDate, path: path())
            case .iso8601: return .string(date.formatted(.iso8601))
            case .secondsSince1970: return try Self.double(date.timeIntervalSince1970, path: path())
            case .millisecondsSince1970: return try Self.double(1000.0 * date.timeIntervalSince1970, path: path())
            }
        } else if T.self == Data.self {
            return .string(unsafeBitCast(value, to: Data.self).base64EncodedString())
        } else if T.self == Decimal.self {
            return .decimal(unsafeBitCast(value, to: Decimal.self))
        } else if T.self == URL.self {
            return .string(unsafeBitCast(value, to: URL.self).absoluteString)
        } else if T.self == UUID.self {
            return .string(unsafeBitCast(value, to: UUID.self).uuidString)
        } else if T.self == Float.self {
            return try Self.float(unsafeBitCast(value, to: Float.self), path: path())
        } else if T.self == Int64.self {
            return .signed(unsafeBitCast(value, to: Int64.self))
        } else if T.self == Int32.self {
            return .signed(Int64(unsafeBitCast(value, to: Int32.self)))
        } else if T.self == UInt64.self {
            return .unsigned(unsafeBitCast(value, to: UInt64.self))
        } else if T.self == UInt.self {
            return .unsigned(UInt64(unsafeBitCast(value, to: UInt.self)))
        }
        return nil
    }

    static func double(_ value: Double, path: @autoclosure () -> [any CodingKey]) throws -> EncodedValue {
        guard value.isFinite else { throw nonConforming(value, path()) }
        return .double(value)
    }

    static func float(_ value: Float, path: @autoclosure () -> [any CodingKey]) throws -> EncodedValue {
        guard value.isFinite else { throw nonConforming(value, path()) }
        return .float(value)
    }

    static func nonConforming<F: FloatingPoint>(_ value: F, _ path: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue(value, EncodingError.Context(
            codingPath: path, debugDescription: "Unable to encode \(F.self).\(value) directly in JSON."))
    }

    /// Encodes `value` as a member or element: scalars as they are, anything else into a
    /// new node through `core`, with the container's keys and `key` on the coding path
    /// meanwhile.
    func encodeValue<T: Encodable>(
        _ value: T, core: RecordEncoderCore, depth: Int, extra: [any CodingKey], key: (any CodingKey)?
    ) throws -> EncodedValue {
        if let scalar = try scalar(value, path: self.path(depth: depth, extra: extra, key: key)) {
            return scalar
        }
        let child = makeNode()
        noteDictionary(value, in: child)
        let savedNode = core.node, savedDepth = core.depth, savedExtra = core.extra
        let savedCount = path.count
        if !extra.isEmpty { path.append(contentsOf: extra) }
        if let key { path.append(key) }
        core.node = child
        core.depth = path.count
        core.extra = []
        defer {
            core.node = savedNode
            core.depth = savedDepth
            core.extra = savedExtra
            path.removeLast(path.count - savedCount)
        }
        try value.encode(to: core)
        return .node(child)
    }

    /// The coding path of a container at `depth` with `extra` keys, plus `key`.
    func path(depth: Int, extra: [any CodingKey], key: (any CodingKey)?) -> [any CodingKey] {
        var result = Array(path.prefix(depth))
        result.append(contentsOf: extra)
        if let key { result.append(key) }
        return result
    }
}

/// The `Encoder` the encoded values see. One instance is reused for every nested value (its
/// node and depth are swapped in and out around each nested `encode(to:)`); `superEncoder`
/// makes separate ones.
final class RecordEncoderCore: Encoder {
    let state: EncodingState
    var node: EncodingNode
    var depth: Int
    var extra: [any CodingKey] = []

    init(state: EncodingState, node: EncodingNode, depth: Int, extra: [any CodingKey] = []) {
        self.state = state
        self.node = node
        self.depth = depth
        self.extra = extra
    }

    var codingPath: [any CodingKey] { state.path(depth: depth, extra: extra, key: nil) }
    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        switch node.kind {
        case .empty: node.kind = .object
        case .object: break
        default: state.unsupported = true
        }
        return KeyedEncodingContainer(RecordKeyedEncodingContainer<Key>(
            core: self, node: node, generation: state.generation, depth: depth, extra: extra))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        switch node.kind {
        case .empty: node.kind = .array
        case .array: break
        default: state.unsupported = true
        }
        return RecordUnkeyedEncodingContainer(core: self, node: node, generation: state.generation, depth: depth, extra: extra)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        RecordSingleValueEncodingContainer(core: self, node: node, generation: state.generation, depth: depth, extra: extra)
    }
}
