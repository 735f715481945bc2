import Foundation

/// The members of one object. Small objects (records) are searched by comparing key bytes;
/// large ones (dictionaries) get a hash index once.
struct RecordKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let core: RecordDecoderCore
    let object: Int
    let depth: Int
    /// Nil for the common case (a record's own object): copying the container then retains
    /// only `core`.
    private let more: More?

    /// What nested and large objects need, and objects whose keys a key strategy converts
    /// (they are always indexed, by converted name).
    final class More {
        let extra: [any CodingKey]
        let index: MemberIndex?
        let converting: Bool
        init(extra: [any CodingKey], index: MemberIndex?, converting: Bool) {
            self.extra = extra
            self.index = index
            self.converting = converting
        }
    }

    var extra: [any CodingKey] { more?.extra ?? [] }
    private var index: MemberIndex? { more?.index }

    init(core: RecordDecoderCore, object: Int, depth: Int, extra: [any CodingKey], converting: Bool = false) {
        self.core = core
        self.object = object
        self.depth = depth
        let index = converting || core.tape[object].count > 16
            ? MemberIndex(core: core, object: object, converting: converting) : nil
        self.more = extra.isEmpty && index == nil ? nil : More(extra: extra, index: index, converting: converting)
    }

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }

    /// Every member's name, converted as the container's keys are; a name given twice is
    /// listed twice (unlike Foundation, which lists it once), so a caller can refuse it (the
    /// relay's JWT header and claims do). None once the decode this container belongs to has
    /// returned: its tape is gone.
    var allKeys: [Key] {
        guard core.generation == core.state.generation else { return [] }
        var keys: [Key] = []
        var entry = object + 1
        let snakeCase = more?.converting == true ? core.state.snakeCase : nil
        for _ in 0..<core.tape[object].count {
            let name = core.stringValue(core.tape[entry])
            if let key = Key(stringValue: snakeCase?.camelCased(name) ?? name) { keys.append(key) }
            entry = Int(core.tape[entry + 1].next)
        }
        return keys
    }

    /// The tape index of the value for `key` (the first, if the key appears twice).
    private func find(_ key: Key) throws -> Int? {
        try core.checkLive()
        let name = key.stringValue
        if let index = more?.index { return index.entries[name] }
        let tape = core.tape
        var entry = object + 1
        for _ in 0..<tape[object].count {
            if core.keyMatches(tape[entry], name) { return entry + 1 }
            entry = Int(tape[entry + 1].next)
        }
        return nil
    }

    private func require(_ key: Key) throws -> Int {
        guard let entry = try find(key) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(
                codingPath: codingPath,
                debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return entry
    }

    private func path(_ key: Key) -> [any CodingKey] { core.state.path(depth: depth, extra: extra, key: key) }

    func contains(_ key: Key) -> Bool { (try? find(key)) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { core.tape[try require(key)].kind == .null }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try core.bool(at: try require(key), path: path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try core.string(at: try require(key), path: path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try core.double(at: try require(key), path: path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try core.float(at: try require(key), path: path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try core.int(at: try require(key), path: path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try core.integer(T.self, at: try require(key), path: path(key))
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try core.decodeValue(type, at: try require(key), depth: depth, extra: extra, key: key)
    }

    /// Nil when the key is missing or null, else the value (one lookup, not three).
    private func present(_ key: Key) throws -> Int? {
        guard let entry = try find(key), core.tape[entry].kind != .null else { return nil }
        return entry
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { try core.bool(at: $0, path: path(key)) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { try core.string(at: $0, path: path(key)) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { try core.double(at: $0, path: path(key)) }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try present(key).map { try core.float(at: $0, path: path(key)) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try present(key).map { try core.int(at: $0, path: path(key)) }
    }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(key) }

    private func integerIfPresent<T: FixedWidthInteger>(_ key: Key) throws -> T? {
        try present(key).map { try core.integer(T.self, at: $0, path: path(key)) }
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try present(key).map { try core.decodeValue(type, at: $0, depth: depth, extra: extra, key: key) }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let entry = try require(key)
        try core.expect(.object, at: entry, [String: Any].self, path: path(key))
        // Converted as the top container's keys are (Foundation's nested containers convert too).
        return KeyedDecodingContainer(RecordKeyedDecodingContainer<NestedKey>(
            core: core, object: entry, depth: depth, extra: extra + [key], converting: core.state.snakeCase != nil))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let entry = try require(key)
        try core.expect(.array, at: entry, [Any].self, path: path(key))
        return RecordUnkeyedDecodingContainer(core: core, array: entry, depth: depth, extra: extra + [key])
    }

    func superDecoder() throws -> any Decoder { try superDecoder(key: RecordSuperKey()) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try superDecoder(key: key) }

    private func superDecoder(key: any CodingKey) throws -> any Decoder {
        try core.checkLive()
        guard let entry = try findAny(key.stringValue) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(
                codingPath: codingPath, debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return RecordDecoderCore(state: core.state, bytes: core.bytes, tape: core.tape, index: entry, depth: depth, extra: extra + [key])
    }

    private func findAny(_ name: String) throws -> Int? {
        if let index = more?.index { return index.entries[name] }
        var entry = object + 1
        for _ in 0..<core.tape[object].count {
            if core.keyMatches(core.tape[entry], name) { return entry + 1 }
            entry = Int(core.tape[entry + 1].next)
        }
        return nil
    }
}

/// A hash index of a large object's members (first occurrence of each key), by the names the
/// key strategy gives them when `converting`.
final class MemberIndex {
    var entries: [String: Int] = [:]

    init(core: RecordDecoderCore, object: Int, converting: Bool = false) {
        let count = Int(core.tape[object].count)
        entries.reserveCapacity(count)
        let snakeCase = converting ? core.state.snakeCase : nil
        var entry = object + 1
        for _ in 0..<count {
            let raw = core.stringValue(core.tape[entry])
            let name = snakeCase?.camelCased(raw) ?? raw
            if entries[name] == nil { entries[name] = entry + 1 }
            entry = Int(core.tape[entry + 1].next)
        }
    }
}

struct RecordUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let core: RecordDecoderCore
    let depth: Int
    let extra: [any CodingKey]
    let count: Int?
    private(set) var currentIndex = 0
    /// The tape index of the next element.
    private var entry: Int

    init(core: RecordDecoderCore, array: Int, depth: Int, extra: [any CodingKey]) {
        self.core = core
        self.depth = depth
        self.extra = extra
        self.count = Int(core.tape[array].count)
        self.entry = array + 1
    }

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }
    var isAtEnd: Bool { currentIndex >= count ?? 0 }

    private func path() -> [any CodingKey] { core.state.path(depth: depth, extra: extra, key: RecordIndexKey(currentIndex)) }

    /// The next element's tape index, after checking that there is one.
    private func next(_ type: Any.Type) throws -> Int {
        try core.checkLive()
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, DecodingError.Context(
                codingPath: path(), debugDescription: "Unkeyed container is at end."))
        }
        return entry
    }

    private mutating func advance() {
        entry = Int(core.tape[entry].next)
        currentIndex += 1
    }

    mutating func decodeNil() throws -> Bool {
        let element = try next(Any?.self)
        guard core.tape[element].kind == .null else { return false }
        advance()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let value = try core.bool(at: try next(Bool.self), path: path())
        advance()
        return value
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let value = try core.string(at: try next(String.self), path: path())
        advance()
        return value
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let value = try core.double(at: try next(Double.self), path: path())
        advance()
        return value
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let value = try core.float(at: try next(Float.self), path: path())
        advance()
        return value
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    mutating func integer<T: FixedWidthInteger>() throws -> T {
        let value = try core.integer(T.self, at: try next(T.self), path: path())
        advance()
        return value
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let element = try next(T.self)
        let value = try core.decodeValue(type, at: element, depth: depth, extra: extra, key: RecordIndexKey(currentIndex))
        advance()
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let element = try next([String: Any].self)
        let key = RecordIndexKey(currentIndex)
        try core.expect(.object, at: element, [String: Any].self, path: path())
        advance()
        return KeyedDecodingContainer(RecordKeyedDecodingContainer<NestedKey>(
            core: core, object: element, depth: depth, extra: extra + [key], converting: core.state.snakeCase != nil))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let element = try next([Any].self)
        let key = RecordIndexKey(currentIndex)
        try core.expect(.array, at: element, [Any].self, path: path())
        advance()
        return RecordUnkeyedDecodingContainer(core: core, array: element, depth: depth, extra: extra + [key])
    }

    mutating func superDecoder() throws -> any Decoder {
        let element = try next((any Decoder).self)
        let key = RecordIndexKey(currentIndex)
        advance()
        return RecordDecoderCore(state: core.state, bytes: core.bytes, tape: core.tape, index: element, depth: depth, extra: extra + [key])
    }
}

struct RecordSingleValueDecodingContainer: SingleValueDecodingContainer {
    let core: RecordDecoderCore
    let entry: Int
    let depth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] { core.state.path(depth: depth, extra: extra, key: nil) }

    func decodeNil() -> Bool { core.generation == core.state.generation && core.tape[entry].kind == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try core.checkLive(); return try core.bool(at: entry, path: codingPath) }
    func decode(_ type: String.Type) throws -> String { try core.checkLive(); return try core.string(at: entry, path: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try core.checkLive(); return try core.double(at: entry, path: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try core.checkLive(); return try core.float(at: entry, path: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    func integer<T: FixedWidthInteger>() throws -> T {
        try core.checkLive()
        return try core.integer(T.self, at: entry, path: codingPath)
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try core.checkLive()
        // The value is this same entry: decode it with the same path (a wrapper's single value).
        return try core.decodeValue(type, at: entry, depth: depth, extra: extra, key: nil)
    }
}
