import Foundation

/// One JSON value under construction: an object, an array, or finished scalar bytes.
///
/// Nodes are pooled per encoder and reused across records. Containers remember the state's
/// `generation`, which changes when an encode ends, so a container kept past the end of
/// `encode(_:)` is detected instead of writing into another record.
final class EncodingNode {
    enum Kind: UInt8 { case empty, object, array, scalar, invalid }

    var kind = Kind.empty
    var keys: [String] = []
    var values: [EncodedValue] = []
    var scalarStart = 0
    var scalarEnd = 0
    /// The key order of the last object written from this node, reused when the next record
    /// has the same keys (the common case for a bulk save of one type).
    var cachedKeys: [String] = []
    var cachedOrder: [Int] = []

    func reset() {
        kind = .empty
        keys.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
    }
}

/// A member or element: bytes already written to the arena, or a nested node.
enum EncodedValue {
    case bytes(start: Int, end: Int)
    case node(EncodingNode)
}

/// What one `RecordJSONEncoder` keeps between records: the scalar arena, the output buffer
/// and the node pool, plus the coding path of the value being encoded.
final class EncodingState {
    var arena: [UInt8] = []
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

    init(userInfo: [CodingUserInfoKey: any Sendable]) {
        self.userInfo = userInfo
    }

    func reset() {
        generation &+= 1
        poolUsed = 0
        arena.removeAll(keepingCapacity: true)
        output.removeAll(keepingCapacity: true)
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

    /// Writes the finished tree to `output`.
    func write(_ node: EncodingNode) {
        switch node.kind {
        case .scalar:
            appendArena(node.scalarStart, node.scalarEnd)
        case .empty, .invalid:
            // A nested value that encoded nothing is `{}`, as in Foundation.
            JSONWriter.appendASCII("{}", to: &output)
        case .array:
            output.append(UInt8(ascii: "["))
            for (position, value) in node.values.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                write(value)
            }
            output.append(UInt8(ascii: "]"))
        case .object:
            output.append(UInt8(ascii: "{"))
            let order = sortedOrder(of: node)
            var first = true
            for index in order {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                JSONWriter.appendString(node.keys[index], to: &output)
                output.append(UInt8(ascii: ":"))
                write(node.values[index])
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private func write(_ value: EncodedValue) {
        switch value {
        case .bytes(let start, let end): appendArena(start, end)
        case .node(let child): write(child)
        }
    }

    @inline(__always)
    private func appendArena(_ start: Int, _ end: Int) {
        arena.withUnsafeBufferPointer { output.append(contentsOf: UnsafeBufferPointer(rebasing: $0[start..<end])) }
    }

    /// Member indexes in UTF-8 key order; of a key encoded twice, the later value wins.
    private func sortedOrder(of node: EncodingNode) -> [Int] {
        if node.keys == node.cachedKeys { return node.cachedOrder }
        let keys = node.keys
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
