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

    private func add(_ value: EncodedValue, _ key: Key) throws {
        guard core.state.generation == generation, node.kind == .object else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
        node.members.append(EncodingMember(key: core.state.memberKey(key.stringValue, in: node), value: value))
    }

    private func path(_ key: Key) -> [any CodingKey] { core.state.path(depth: depth, extra: extra, key: key) }

    mutating func encodeNil(forKey key: Key) throws { try add(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try add(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { try add(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try add(try EncodingState.double(value, path: path(key)), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try add(try EncodingState.float(value, path: path(key)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try add(.signed(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try add(.signed(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try add(.signed(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try add(.signed(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try add(.signed(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try add(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try add(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try add(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try add(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try add(.unsigned(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        guard core.state.generation == generation, node.kind == .object else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
        let encoded = try core.state.encodeValue(value, core: core, depth: depth, extra: extra, key: key)
        node.members.append(EncodingMember(key: core.state.memberKey(key.stringValue, in: node), value: encoded))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = attach(.object, key.stringValue)
        return KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(
            core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = attach(.array, key.stringValue)
        return RecordUnkeyedEncodingContainer(core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(key: RecordSuperKey()) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

    private func superEncoder(key: any CodingKey) -> any Encoder {
        let child = attach(.empty, key.stringValue)
        return RecordEncoderCore(state: core.state, node: child, depth: depth, extra: extra + [key])
    }

    /// A new node of `kind` as the member `key`.
    private func attach(_ kind: EncodingNode.Kind, _ key: String) -> EncodingNode {
        let child = core.state.makeNode()
        child.kind = kind
        if core.state.generation == generation, node.kind == .object {
            node.members.append(EncodingMember(key: core.state.memberKey(key, in: node), value: .node(child)))
        } else {
            core.state.unsupported = true
        }
        return child
    }
}

struct RecordUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let core: RecordEncoderCore
    let node: EncodingNode
    let generation: Int
    let depth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }
    var count: Int { node.members.count }

    private func add(_ value: EncodedValue) throws {
        guard core.state.generation == generation, node.kind == .array else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
        node.members.append(EncodingMember(key: "", value: value))
    }

    private func indexPath() -> [any CodingKey] {
        core.state.path(depth: depth, extra: extra, key: RecordIndexKey(node.members.count))
    }

    mutating func encodeNil() throws { try add(.null) }
    mutating func encode(_ value: Bool) throws { try add(.bool(value)) }
    mutating func encode(_ value: String) throws { try add(.string(value)) }
    mutating func encode(_ value: Double) throws { try add(try EncodingState.double(value, path: indexPath())) }
    mutating func encode(_ value: Float) throws { try add(try EncodingState.float(value, path: indexPath())) }
    mutating func encode(_ value: Int) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int8) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int16) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int32) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int64) throws { try add(.signed(value)) }
    mutating func encode(_ value: UInt) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { try add(.unsigned(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        guard core.state.generation == generation, node.kind == .array else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
        let key = RecordIndexKey(node.members.count)
        let encoded = try core.state.encodeValue(value, core: core, depth: depth, extra: extra, key: key)
        node.members.append(EncodingMember(key: "", value: encoded))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = RecordIndexKey(node.members.count)
        let child = attach(.object)
        return KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(
            core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = RecordIndexKey(node.members.count)
        let child = attach(.array)
        return RecordUnkeyedEncodingContainer(core: core, node: child, generation: core.state.generation, depth: depth, extra: extra + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let key = RecordIndexKey(node.members.count)
        let child = attach(.empty)
        return RecordEncoderCore(state: core.state, node: child, depth: depth, extra: extra + [key])
    }

    private func attach(_ kind: EncodingNode.Kind) -> EncodingNode {
        let child = core.state.makeNode()
        child.kind = kind
        if core.state.generation == generation, node.kind == .array {
            node.members.append(EncodingMember(key: "", value: .node(child)))
        } else {
            core.state.unsupported = true
        }
        return child
    }
}

struct RecordSingleValueEncodingContainer: SingleValueEncodingContainer {
    let core: RecordEncoderCore
    let node: EncodingNode
    let generation: Int
    let depth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }

    private func check() throws {
        guard core.state.generation == generation, node.kind == .empty else {
            core.state.unsupported = true
            throw RecordFastPathUnsupported()
        }
    }

    private func add(_ value: EncodedValue) throws {
        try check()
        node.kind = .scalar
        node.scalar = value
    }

    mutating func encodeNil() throws { try add(.null) }
    mutating func encode(_ value: Bool) throws { try add(.bool(value)) }
    mutating func encode(_ value: String) throws { try add(.string(value)) }
    mutating func encode(_ value: Double) throws { try add(try EncodingState.double(value, path: codingPath)) }
    mutating func encode(_ value: Float) throws { try add(try EncodingState.float(value, path: codingPath)) }
    mutating func encode(_ value: Int) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int8) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int16) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int32) throws { try add(.signed(Int64(value))) }
    mutating func encode(_ value: Int64) throws { try add(.signed(value)) }
    mutating func encode(_ value: UInt) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { try add(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { try add(.unsigned(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try check()
        if let scalar = try core.state.scalar(value, path: codingPath) {
            node.kind = .scalar
            node.scalar = scalar
            return
        }
        // The value's own encoding becomes this node's (a wrapper type's single value).
        core.state.noteDictionary(value, in: node)
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
    }
}

/// Thrown inside the fast encoder when a value uses the `Encoder` API in a way it does not
/// support; `RecordJSONEncoder.encode` then encodes the value with Foundation instead.
struct RecordFastPathUnsupported: Error {}
