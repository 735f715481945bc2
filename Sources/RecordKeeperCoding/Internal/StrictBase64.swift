package import Foundation

/// Standard base64 (RFC 4648 §4, with `=` padding, no line breaks), written and read without
/// a `String` or `Data` per value: the payloads of sync's wire JSON (`SyncWireJSON`), the
/// codec's `Data` values, and the tool's base64 input. Foundation's `base64EncodedData()` and
/// `Data(base64Encoded:)` cost a `Data` (and, to read, a `String`) for each of the thousands of
/// payloads a body holds, and were half of the relay's time to write a page
/// (docs/PERFORMANCE.md, S6/S7). The bytes written are Foundation's.
///
/// Reading is strict: whole groups of four, padding only at the end, unused bits zero, every
/// other byte in the alphabet; anything else is `nil`. (Foundation's `Data(base64Encoded:)` on
/// Linux reads `====` as one zero byte and `AA=A` as two.)
package enum StrictBase64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// 0-63 for the alphabet's bytes, 0xFF for every other byte.
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(index) }
        return values
    }()

    /// Appends the base64 of `data` to `out`: the bytes of `data.base64EncodedData()`.
    package static func append(_ data: Data, to out: inout [UInt8]) {
        let count = data.count
        guard count > 0 else { return }
        let encodedCount = (count + 2) / 3 * 4
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: encodedCount))
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            alphabet.withUnsafeBufferPointer { table in
                out.withUnsafeMutableBufferPointer { buffer in
                    var write = start
                    var read = 0
                    while read + 3 <= count {
                        let value = UInt32(input[read]) << 16 | UInt32(input[read + 1]) << 8 | UInt32(input[read + 2])
                        buffer[write] = table[Int(value >> 18)]
                        buffer[write + 1] = table[Int(value >> 12 & 0x3F)]
                        buffer[write + 2] = table[Int(value >> 6 & 0x3F)]
                        buffer[write + 3] = table[Int(value & 0x3F)]
                        read += 3
                        write += 4
                    }
                    switch count - read {
                    case 1:
                        let value = UInt32(input[read]) << 16
                        buffer[write] = table[Int(value >> 18)]
                        buffer[write + 1] = table[Int(value >> 12 & 0x3F)]
                        buffer[write + 2] = UInt8(ascii: "=")
                        buffer[write + 3] = UInt8(ascii: "=")
                    case 2:
                        let value = UInt32(input[read]) << 16 | UInt32(input[read + 1]) << 8
                        buffer[write] = table[Int(value >> 18)]
                        buffer[write + 1] = table[Int(value >> 12 & 0x3F)]
                        buffer[write + 2] = table[Int(value >> 6 & 0x3F)]
                        buffer[write + 3] = UInt8(ascii: "=")
                    default:
                        break
                    }
                }
            }
        }
    }

    /// The bytes `text` encodes, when it is base64 exactly as Foundation writes it; `nil`
    /// otherwise.
    package static func decode(_ text: String) -> Data? {
        var text = text
        return text.withUTF8 { decode($0) }
    }

    /// The bytes `text` encodes, when it is base64 exactly as Foundation writes it; `nil`
    /// otherwise.
    package static func decode(_ text: UnsafeBufferPointer<UInt8>) -> Data? {
        let count = text.count
        guard count % 4 == 0 else { return nil }
        guard count > 0 else { return Data() }
        var padding = 0
        if text[count - 1] == UInt8(ascii: "=") { padding = text[count - 2] == UInt8(ascii: "=") ? 2 : 1 }
        let decodedCount = count / 4 * 3 - padding
        // Decoded into a temporary buffer (on the stack when small), then copied once into the
        // Data: cheaper than a zeroed Data written in place.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: decodedCount + 2) { output -> Data? in
            let valid = values.withUnsafeBufferPointer { table -> Bool in
                var read = 0
                var write = 0
                var invalid: UInt8 = 0
                // Every whole group but the last.
                while read + 4 < count {
                    let a = table[Int(text[read])], b = table[Int(text[read + 1])]
                    let c = table[Int(text[read + 2])], d = table[Int(text[read + 3])]
                    invalid |= a | b | c | d
                    let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    output[write] = UInt8(truncatingIfNeeded: value >> 16)
                    output[write + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    output[write + 2] = UInt8(truncatingIfNeeded: value)
                    read += 4
                    write += 3
                }
                // 0xFF marks a byte outside the alphabet: its high bits survive the OR.
                guard invalid & 0xC0 == 0 else { return false }
                let a = table[Int(text[read])], b = table[Int(text[read + 1])]
                guard (a | b) & 0xC0 == 0 else { return false }
                switch padding {
                case 2:
                    // One byte: the low 4 bits of b are unused and must be zero.
                    guard b & 0x0F == 0 else { return false }
                    output[write] = a << 2 | b >> 4
                case 1:
                    let c = table[Int(text[read + 2])]
                    guard c & 0xC0 == 0, c & 0x03 == 0 else { return false }
                    output[write] = a << 2 | b >> 4
                    output[write + 1] = b << 4 | c >> 2
                default:
                    let c = table[Int(text[read + 2])], d = table[Int(text[read + 3])]
                    guard (c | d) & 0xC0 == 0 else { return false }
                    output[write] = a << 2 | b >> 4
                    output[write + 1] = b << 4 | c >> 2
                    output[write + 2] = c << 6 | d
                }
                return true
            }
            guard valid, let base = output.baseAddress else { return nil }
            return Data(bytes: base, count: decodedCount)
        }
    }
}
