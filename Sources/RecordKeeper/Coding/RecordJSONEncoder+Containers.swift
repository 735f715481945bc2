import Foundation

/// The coding key `superEncoder()` and `superDecoder()` use, as in Foundation.
struct RecordSuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { return nil }
}

/// An array index in a coding path.
struct RecordIndexKey: CodingKey {
    let index: Int
    var stringValue: String { "Index \(index)" }
    var intValue: Int? { index }
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.index = intValue }
}

struct RecordKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let core: RecordEncoderCore
    let node: EncodingNode
    let generation: Int
    let depth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }

    private func check() throws {
        guard core.state.generation == generation, node.kind == .object else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
    }

    private func appendScalar(_ key: Key, _ write: (inout [UInt8]) throws -> Void) throws {
        try check()
        let state = core.state
        let start = state.arena.count
        try write(&state.arena)
        node.keys.append(key.stringValue)
        node.values.append(.bytes(start: start, end: state.arena.count))
    }

    mutating func encodeNil(forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendASCII("null", to: &$0) } }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try appendScalar(key) { JSONWriter.appendASCII(value ? "true" : "false", to: &$0) }
    }
    mutating func encode(_ value: String, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendString(value, to: &$0) } }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        guard value.isFinite else { throw EncodingState.nonConforming(value, core.state.path(depth: depth, extra: extra, key: key)) }
        try appendScalar(key) { JSONWriter.appendDouble(value, to: &$0) }
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        guard value.isFinite else { throw EncodingState.nonConforming(value, core.state.path(depth: depth, extra: extra, key: key)) }
        try appendScalar(key) { JSONWriter.appendFloat(value, to: &$0) }
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try appendScalar(key) { JSONWriter.appendInteger(value, to: &$0) } }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try check()
        let encoded = try core.state.encodeValue(value, core: core, depth: depth, extra: extra, key: key)
        node.keys.append(key.stringValue)
        node.values.append(encoded)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = core.state.makeNode()
        child.kind = .object
        attach(child, key.stringValue)
        return KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(
            core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = core.state.makeNode()
        child.kind = .array
        attach(child, key.stringValue)
        return RecordUnkeyedEncodingContainer(core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(key: RecordSuperKey()) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

    private func superEncoder(key: any CodingKey) -> any Encoder {
        let child = core.state.makeNode()
        attach(child, key.stringValue)
        return RecordEncoderCore(state: core.state, node: child, depth: depth, extra: extra + [key])
    }

    private func attach(_ child: EncodingNode, _ key: String) {
        guard core.state.generation == generation, node.kind == .object else {
            core.state.unsupported = true
            return
        }
        node.keys.append(key)
        node.values.append(.node(child))
    }
}

struct RecordUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let core: RecordEncoderCore
    let node: EncodingNode
    let generation: Int
    let depth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }
    var count: Int { node.values.count }

    private func check() throws {
        guard core.state.generation == generation, node.kind == .array else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
    }

    private func appendScalar(_ write: (inout [UInt8]) throws -> Void) throws {
        try check()
        let state = core.state
        let start = state.arena.count
        try write(&state.arena)
        node.values.append(.bytes(start: start, end: state.arena.count))
    }

    mutating func encodeNil() throws { try appendScalar { JSONWriter.appendASCII("null", to: &$0) } }
    mutating func encode(_ value: Bool) throws { try appendScalar { JSONWriter.appendASCII(value ? "true" : "false", to: &$0) } }
    mutating func encode(_ value: String) throws { try appendScalar { JSONWriter.appendString(value, to: &$0) } }
    mutating func encode(_ value: Double) throws {
        guard value.isFinite else { throw EncodingState.nonConforming(value, indexPath()) }
        try appendScalar { JSONWriter.appendDouble(value, to: &$0) }
    }
    mutating func encode(_ value: Float) throws {
        guard value.isFinite else { throw EncodingState.nonConforming(value, indexPath()) }
        try appendScalar { JSONWriter.appendFloat(value, to: &$0) }
    }
    mutating func encode(_ value: Int) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int8) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int16) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int32) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int64) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt8) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt16) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt32) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt64) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try check()
        let encoded = try core.state.encodeValue(value, core: core, depth: depth, extra: extra, key: RecordIndexKey(node.values.count))
        node.values.append(encoded)
    }

    private func indexPath() -> [any CodingKey] {
        core.state.path(depth: depth, extra: extra, key: RecordIndexKey(node.values.count))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = RecordIndexKey(node.values.count)
        let child = core.state.makeNode()
        child.kind = .object
        attach(child)
        return KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(
            core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = RecordIndexKey(node.values.count)
        let child = core.state.makeNode()
        child.kind = .array
        attach(child)
        return RecordUnkeyedEncodingContainer(core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let key = RecordIndexKey(node.values.count)
        let child = core.state.makeNode()
        attach(child)
        return RecordEncoderCore(state: core.state, node: child, depth: depth, extra: extra + [key])
    }

    private func attach(_ child: EncodingNode) {
        guard core.state.generation == generation, node.kind == .array else {
            core.state.unsupported = true
            return
        }
        node.values.append(.node(child))
    }
}

struct RecordSingleValueEncodingContainer: SingleValueEncodingContainer {
    let core: RecordEncoderCore
    let node: EncodingNode
    let generation: Int
    let depth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }

    private func appendScalar(_ write: (inout [UInt8]) throws -> Void) throws {
        guard core.state.generation == generation, node.kind == .empty else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
        let state = core.state
        let start = state.arena.count
        try write(&state.arena)
        node.kind = .scalar
        node.scalarStart = start
        node.scalarEnd = state.arena.count
    }

    mutating func encodeNil() throws { try appendScalar { JSONWriter.appendASCII("null", to: &$0) } }
    mutating func encode(_ value: Bool) throws { try appendScalar { JSONWriter.appendASCII(value ? "true" : "false", to: &$0) } }
    mutating func encode(_ value: String) throws { try appendScalar { JSONWriter.appendString(value, to: &$0) } }
    mutating func encode(_ value: Double) throws {
        guard value.isFinite else { throw EncodingState.nonConforming(value, codingPath) }
        try appendScalar { JSONWriter.appendDouble(value, to: &$0) }
    }
    mutating func encode(_ value: Float) throws {
        guard value.isFinite else { throw EncodingState.nonConforming(value, codingPath) }
        try appendScalar { JSONWriter.appendFloat(value, to: &$0) }
    }
    mutating func encode(_ value: Int) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int8) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int16) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int32) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: Int64) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt8) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt16) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt32) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }
    mutating func encode(_ value: UInt64) throws { try appendScalar { JSONWriter.appendInteger(value, to: &$0) } }

    mutating func encode<T: Encodable>(_ value: T) throws {
        guard core.state.generation == generation, node.kind == .empty else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
        let state = core.state
        let start = state.arena.count
        if try state.appendScalar(value, path: codingPath) {
            node.kind = .scalar
            node.scalarStart = start
            node.scalarEnd = state.arena.count
            return
        }
        // The value's own encoding becomes this node's (a wrapper type's single value).
        let savedNode = core.node, savedDepth = core.depth, savedExtra = core.extra
        core.node = node
        core.depth = depth
        core.extra = extra
        defer {
            core.node = savedNode
            core.depth = savedDepth
            core.extra = savedExtra
        }
        try value.encode(to: core)
        // A value that encoded nothing through a single value container is `{}`.
        if node.kind == .empty { node.kind = .object }
    }
}

/// Thrown inside the fast encoder when a value uses the `Encoder` API in a way it does not
/// support; `RecordJSONEncoder.encode` then encodes the value with Foundation instead.
struct RecordFastPathUnsupported: Error {}
