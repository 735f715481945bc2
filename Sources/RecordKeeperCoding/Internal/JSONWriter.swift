import Foundation

/// Appends JSON text to a byte buffer exactly as Foundation's `JSONEncoder` writes it with
/// `RecordCoding`'s settings (`.sortedKeys`, `.withoutEscapingSlashes`).
///
/// Numbers: integers in decimal; `Double` and `Float` as their Swift `description` with a
/// trailing `.0` removed (`1e+16`, `-0`, `5e-324`, `0.1`); `Decimal` as its `description`.
/// Strings: `"` and `\` escaped, `\b \f \n \r \t` for those controls, other controls below
/// 0x20 as `\u00xx` (lower-case hex); everything else, `/` included, as UTF-8.
package enum JSONWriter {
    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    @inline(__always)
    package static func appendASCII(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    package static func appendInt64(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        appendUInt64(value.magnitude, to: &out)
    }

    static func appendUInt64(_ value: UInt64, to out: inout [UInt8]) {
        var magnitude = value
        if magnitude < 10 {
            out.append(UInt8(truncatingIfNeeded: magnitude) &+ 0x30)
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = 20
            while magnitude > 0 {
                index -= 1
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                digits[index] = UInt8(truncatingIfNeeded: remainder) &+ 0x30
                magnitude = quotient
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index..<20]))
        }
    }

    /// `value` must be finite (the caller throws for NaN and infinities).
    static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        // Integral values below 1e15 print as "123.0" in `description`: write the integer.
        if value.magnitude < 1e15, value == value.rounded(.towardZero) {
            if value == 0 {
                if value.sign == .minus { out.append(UInt8(ascii: "-")) }
                out.append(UInt8(ascii: "0"))
            } else {
                appendInt64(Int64(value), to: &out)
            }
            return
        }
        appendDescription(value.description, to: &out)
    }

    /// `value` must be finite.
    static func appendFloat(_ value: Float, to out: inout [UInt8]) {
        appendDescription(value.description, to: &out)
    }

    static func appendDecimal(_ value: Decimal, to out: inout [UInt8]) {
        out.append(contentsOf: value.description.utf8)
    }

    /// A floating-point `description` without a trailing ".0", as Foundation writes it.
    private static func appendDescription(_ text: String, to out: inout [UInt8]) {
        let utf8 = text.utf8
        if utf8.count >= 2, utf8.last == UInt8(ascii: "0"), utf8[utf8.index(utf8.endIndex, offsetBy: -2)] == UInt8(ascii: ".") {
            out.append(contentsOf: utf8.dropLast(2))
        } else {
            out.append(contentsOf: utf8)
        }
    }

    package static func appendString(_ string: String, to out: inout [UInt8]) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { appendString(utf8: $0, to: &out) }
        if done == nil {
            let copy = Array(string.utf8)
            copy.withUnsafeBufferPointer { appendString(utf8: $0, to: &out) }
        }
    }

    static func appendString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        var index = 0
        let count = bytes.count
        while index < count {
            index = firstSpecial(in: bytes, from: index)
            guard index < count else { break }
            let byte = bytes[index]
            if runStart < index { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
            out.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
            case 0x08: out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "f"))
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            default:
                appendASCII("u00", to: &out)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            }
            index += 1
            runStart = index
        }
        if runStart < count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count])) }
        out.append(UInt8(ascii: "\""))
    }

    /// The index of the first byte at or after `start` that must be escaped (below 0x20, `"`
    /// or `\`), or `bytes.count`; eight bytes at a time where it can.
    @inline(__always)
    static func firstSpecial(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        let count = bytes.count
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                // Bytes of 0x80 and above are never special; the tests below are exact for
                // the others, so a match only makes the byte loop look closer.
                let control = (word &- ones &* 0x20) & ~word
                let quote = ((word ^ (ones &* 0x22)) &- ones) & ~(word ^ (ones &* 0x22))
                let backslash = ((word ^ (ones &* 0x5C)) &- ones) & ~(word ^ (ones &* 0x5C))
                if (control | quote | backslash) & highs != 0 { break }
                index += 8
            }
        }
        while index < count {
            let byte = bytes[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return index }
            index += 1
        }
        return index
    }

    /// Whether `a` and `b` have the same UTF-8 bytes (`==` compares canonical equivalence).
    static func sameUTF8(_ a: String, _ b: String) -> Bool {
        let fast: Bool?? = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in
                left.count == right.count
                    && (left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
            }
        }
        if let fast, let result = fast { return result }
        return a.utf8.elementsEqual(b.utf8)
    }

    /// Whether `a` sorts before `b` in UTF-8 byte order (the order of Foundation's
    /// `.sortedKeys`, which equals Unicode scalar order and is not normalization-aware).
    static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        let fast: Bool?? = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in
                let common = min(left.count, right.count)
                if common > 0, let l = left.baseAddress, let r = right.baseAddress {
                    let order = memcmp(l, r, common)
                    if order != 0 { return order < 0 }
                }
                return left.count < right.count
            }
        }
        if let fast, let result = fast { return result }
        return a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}
