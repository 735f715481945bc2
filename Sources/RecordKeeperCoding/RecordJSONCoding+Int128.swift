import Foundation

// 128-bit integers (Swift 6; macOS 15, iOS 18 and later on Apple platforms). The standard
// library's default implementations of these container requirements throw ("has not
// implemented support for Int128"), so each container implements them.
//
// Encoding: the value goes to Foundation's `JSONEncoder`, which writes them (the fast path
// gives up, as for any value it does not handle, and the result is byte-identical anyway).
// Decoding: each container's own integer reading, as for every other integer.

extension EncodingState {
    /// Hands the whole value to Foundation's `JSONEncoder` (see `RecordJSONEncoder.encode`).
    func giveUpFastPath() throws -> Never {
        unsupported = true
        throw RecordFastPathUnsupported()
    }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension RecordKeyedEncodingContainer {
    mutating func encode(_ value: Int128, forKey key: Key) throws { try core.state.giveUpFastPath() }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try core.state.giveUpFastPath() }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension RecordUnkeyedEncodingContainer {
    mutating func encode(_ value: Int128) throws { try core.state.giveUpFastPath() }
    mutating func encode(_ value: UInt128) throws { try core.state.giveUpFastPath() }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension RecordSingleValueEncodingContainer {
    mutating func encode(_ value: Int128) throws { try core.state.giveUpFastPath() }
    mutating func encode(_ value: UInt128) throws { try core.state.giveUpFastPath() }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension RecordKeyedDecodingContainer {
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try integer(key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try integer(key) }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension RecordUnkeyedDecodingContainer {
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try integer() }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try integer() }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension RecordSingleValueDecodingContainer {
    func decode(_ type: Int128.Type) throws -> Int128 { try integer() }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try integer() }
}
