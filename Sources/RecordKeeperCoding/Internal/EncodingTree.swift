import Foundation

/// One JSON value under construction: an object, an array, or a scalar.
///
/// Nodes are pooled per encoder and reused across records. Containers remember the state's
/// `generation`, which changes when an encode ends, so a container kept past the end of
/// `encode(_:)` is detected instead of writing into another record.
final class EncodingNode {
    enum Kind: UInt8 { case empty, object, array, scalar }

    var kind = Kind.empty
    /// Object members (in encoding order) or array elements (with empty keys).
    var members: [EncodingMember] = []
    var scalar = EncodedValue.null
    /// The key order of the last object written from this node, reused when the next record
    /// has the same keys (the common case for a bulk save of one type).
    var cachedKeys: [String] = []
    var cachedOrder: [Int] = []
    /// True for the object of a `[String: …]` dictionary: its keys are data, never converted
    /// by a key strategy (as in Foundation).
    var keepsKeys = false

    func reset() {
        kind = .empty
        keepsKeys = false
        members.removeAll(keepingCapacity: true)
    }
}

struct EncodingMember {
    var key: String
    var value: EncodedValue
}

/// A member, element or single value: a scalar kept as its Swift value until the tree is
/// written, or a nested node.
enum EncodedValue {
    case null
    case bool(Bool)
    case string(String)
    case signed(Int64)
    case unsigned(UInt64)
    /// Finite (checked when it was encoded).
    case double(Double)
    /// Finite (checked when it was encoded).
    case float(Float)
    case decimal(Decimal)
    case node(EncodingNode)
}

/// What one `RecordJSONEncoder` keeps between records: the output buffer and the node pool,
/// plus the coding path of the value being encoded.
final class EncodingState {
    var output: [UInt8] = []
    private var pool: [EncodingNode] = []
    private var poolUsed = 0
    private(set) var generation = 0
    var path: [any CodingKey] = []
    /// Set when the value uses the encoder in a way the fast path does not support; the
    /// encoder then encodes the value again with Foundation's `JSONEncoder`.
    var unsupported = false
    /// Whether an encode is running (see `RecordJSONEncoder.encode`).
    var isBusy = false
    let userInfo: [CodingUserInfoKey: any Sendable]
    let dates: RecordCoding.DateStrategy
    /// The snake-case conversion, or nil for `.useDefaultKeys`.
    let snakeCase: SnakeCaseKeys?

    init(userInfo: [CodingUserInfoKey: any Sendable], strategies: RecordCoding.Strategies = .default) {
        self.userInfo = userInfo
        self.dates = strategies.dates
        self.snakeCase = strategies.keys == .snakeCase ? SnakeCaseKeys() : nil
    }

    /// The JSON name of a member `key` of `node`, after the key strategy.
    @inline(__always)
    func memberKey(_ key: String, in node: EncodingNode) -> String {
        guard let snakeCase, !node.keepsKeys else { return key }
        return snakeCase.snakeCased(key)
    }

    /// Marks `node` as a `[String: …]` dictionary's object when `value` is one and a key
    /// strategy is in effect.
    @inline(__always)
    func noteDictionary<T>(_ value: T, in node: EncodingNode) {
        if snakeCase != nil, value is any StringKeyedDictionary { node.keepsKeys = true }
    }

    func reset() {
        generation &+= 1
        poolUsed = 0
        path.removeAll(keepingCapacity: true)
        unsupported = false
    }

    /// Ends an encode: containers of this encode are stale from now on.
    func finish() {
        generation &+= 1
    }

    func makeNode() -> EncodingNode {
        if poolUsed == pool.count { pool.append(EncodingNode()) }
        let node = pool[poolUsed]
        poolUsed += 1
        node.reset()
        return node
    }

    /// The JSON text of `value`, written into the reused output buffer.
    /// - Throws: `EncodingError.invalidValue` for arrays and objects nested 512 deep, as
    ///   Foundation's `JSONEncoder` (whose writer stops there), and no decoder reads them back.
    func serialize(_ value: EncodedValue) throws -> Data {
        var out: [UInt8] = []
        swap(&out, &output)  // write to a local: no exclusivity checks per byte
        defer { swap(&out, &output) }
        out.removeAll(keepingCapacity: true)
        try Self.write(value, to: &out, level: 0)
        return Data(out)
    }

    /// Foundation's `JSONWriter.maximumRecursionDepth`: an array or object at this level (the
    /// outermost is level 1) is refused.
    static let maximumNesting = 512

    static func write(_ value: EncodedValue, to out: inout [UInt8], level: Int) throws {
        switch value {
        case .null: JSONWriter.appendASCII("null", to: &out)
        case .bool(let flag): JSONWriter.appendASCII(flag ? "true" : "false", to: &out)
        case .string(let string): JSONWriter.appendString(string, to: &out)
        case .signed(let integer): JSONWriter.appendInt64(integer, to: &out)
        case .unsigned(let integer): JSONWriter.appendUInt64(integer, to: &out)
        case .double(let double): JSONWriter.appendDouble(double, to: &out)
        case .float(let float): JSONWriter.appendFloat(float, to: &out)
        case .decimal(let decimal): JSONWriter.appendDecimal(decimal, to: &out)
        case .node(let node): try write(node, to: &out, level: level)
        }
    }

    private static func write(_ node: EncodingNode, to out: inout [UInt8], level: Int) throws {
        if node.kind != .scalar, level + 1 >= maximumNesting {
            throw EncodingError.invalidValue(
                node.kind, EncodingError.Context(
                    codingPath: [], debugDescription: "Arrays and objects nested \(maximumNesting) deep: Foundation's "
                        + "JSONEncoder refuses them, and no JSON decoder here reads them back."))
        }
        switch node.kind {
        case .scalar:
            try write(node.scalar, to: &out, level: level)
        case .empty:
            // A nested value that encoded nothing is `{}`, as in Foundation.
            JSONWriter.appendASCII("{}", to: &out)
        case .array:
            out.append(UInt8(ascii: "["))
            let members = node.members
            for index in members.indices {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                try write(members[index].value, to: &out, level: level + 1)
            }
            out.append(UInt8(ascii: "]"))
        case .object:
            out.append(UInt8(ascii: "{"))
            let members = node.members
            var first = true
            for index in sortedOrder(of: node) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                JSONWriter.appendString(members[index].key, to: &out)
                out.append(UInt8(ascii: ":"))
                try write(members[index].value, to: &out, level: level + 1)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Member indexes in UTF-8 key order; of a key encoded twice, the later value wins.
    private static func sortedOrder(of node: EncodingNode) -> [Int] {
        let members = node.members
        let cachedKeys = node.cachedKeys
        if members.count == cachedKeys.count {
            var same = true
            // Byte equality, not `==`: canonically equivalent keys can sort differently.
            for index in members.indices where !JSONWriter.sameUTF8(members[index].key, cachedKeys[index]) {
                same = false
                break
            }
            if same { return node.cachedOrder }
        }
        let keys = members.map(\.key)
        var order = Array(keys.indices)
        if order.count <= 16 {
            // Insertion sort: few keys, and stable (equal keys keep their encoding order).
            for i in order.indices.dropFirst() {
                let current = order[i]
                var j = i
                while j > 0, JSONWriter.utf8Precedes(keys[current], keys[order[j - 1]]) {
                    order[j] = order[j - 1]
                    j -= 1
                }
                order[j] = current
            }
        } else {
            order.sort { left, right in
                if keys[left] == keys[right] { return left < right }
                return JSONWriter.utf8Precedes(keys[left], keys[right])
            }
        }
        var unique: [Int] = []
        unique.reserveCapacity(order.count)
        for index in order {
            if let last = unique.last, keys[last] == keys[index] {
                unique[unique.count - 1] = index
            } else {
                unique.append(index)
            }
        }
        node.cachedKeys = keys
        node.cachedOrder = unique
        return unique
    }
}
