import Foundation

/// Converts the text of JSON numbers (already validated by `JSONTapeParser`) to Swift numbers
/// without making a `String` for the common forms.
enum JSONNumbers {
    /// An integer written without fraction or exponent, or nil when it does not fit.
    static func int64(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = bytes[0] == UInt8(ascii: "-")
        guard let magnitude = magnitude(bytes, from: negative ? 1 : 0) else { return nil }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    /// An unsigned integer written without fraction or exponent ("-0" is 0), or nil.
    static func uint64(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
        let negative = bytes[0] == UInt8(ascii: "-")
        guard let magnitude = magnitude(bytes, from: negative ? 1 : 0) else { return nil }
        if negative && magnitude != 0 { return nil }
        return magnitude
    }

    @inline(__always)
    private static func magnitude(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> UInt64? {
        var magnitude: UInt64 = 0
        var index = start
        if bytes.count - start <= 19 {  // cannot overflow
            while index < bytes.count {
                magnitude = magnitude &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
            return magnitude
        }
        while index < bytes.count {
            let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(bytes[index] &- UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            magnitude = sum
            index += 1
        }
        return magnitude
    }

    /// 1e0…1e22, each exact (built by multiplying, which stays exact up to 1e22).
    private static let exactPowers: [Double] = {
        var powers: [Double] = [1]
        for _ in 1...22 { powers.append(powers[powers.count - 1] * 10) }
        return powers
    }()

    /// The nearest `Double`, or nil when the number is out of `Double`'s range (as
    /// Foundation, which rejects numbers that overflow or underflow to zero).
    static func double(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        // Clinger's fast path: up to 15 significant digits and a power of ten up to 22 are
        // both exact in a Double, so one multiplication or division rounds correctly.
        var index = 0
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var exponent = 0
        var fast = true
        while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
            if mantissa != 0 || bytes[index] != UInt8(ascii: "0") { digits += 1 }
            mantissa = mantissa &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0"))
            index += 1
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
                if mantissa != 0 || bytes[index] != UInt8(ascii: "0") { digits += 1 }
                mantissa = mantissa &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0"))
                exponent -= 1
                index += 1
            }
        }
        if index < bytes.count {  // exponent part
            fast = false
        }
        if fast, digits <= 15, exponent >= -22 {
            var value = Double(mantissa)
            if exponent < 0 { value /= exactPowers[-exponent] }
            return negative ? -value : value
        }
        guard let value = Double(String(decoding: bytes, as: UTF8.self)), value.isFinite else { return nil }
        if value == 0 && hasNonZeroDigit(bytes) { return nil }
        return value
    }

    /// The nearest `Float`, or nil when out of range.
    static func float(_ bytes: UnsafeBufferPointer<UInt8>) -> Float? {
        guard let value = Float(String(decoding: bytes, as: UTF8.self)), value.isFinite else { return nil }
        if value == 0 && hasNonZeroDigit(bytes) { return nil }
        return value
    }

    /// A JSON number with a fraction or an exponent (`9007199254740993.0`, `1.8e19`) as the
    /// decimal digits of the integer it is exactly (`-` first when negative), or nil when it is
    /// not an integer or has more than 40 digits (more than any 128-bit integer). Read from its
    /// digits, never through a `Double`, whose 53 bits would round a larger integer.
    static func integerDigits(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var index = 0
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        var digits: [UInt8] = []
        var point: Int?
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits.append(byte)
            } else if byte == UInt8(ascii: "."), point == nil {
                point = digits.count
            } else {
                break
            }
            index += 1
        }
        var exponent = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var exponentNegative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var magnitude = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9") {
                magnitude = min(magnitude * 10 + Int(bytes[index] - UInt8(ascii: "0")), 100_000)
                index += 1
            }
            exponent = exponentNegative ? -magnitude : magnitude
        }
        guard index == bytes.count, !digits.isEmpty else { return nil }
        // Leading zeros go (in one step: a payload may hold millions of them): the integer
        // part starts at the first other digit.
        var point0 = (point ?? digits.count) + exponent
        guard let firstSignificant = digits.firstIndex(where: { $0 != UInt8(ascii: "0") }) else { return "0" }
        digits.removeSubrange(..<firstSignificant)
        point0 -= firstSignificant
        guard point0 > 0, point0 <= 40 else { return nil }
        if point0 < digits.count {
            guard digits[point0...].allSatisfy({ $0 == UInt8(ascii: "0") }) else { return nil }
            digits.removeSubrange(point0...)
        } else {
            digits.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: point0 - digits.count))
        }
        return (negative ? "-" : "") + String(decoding: digits, as: UTF8.self)
    }

    static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Decimal? {
        Decimal(string: String(decoding: bytes, as: UTF8.self), locale: Locale(identifier: "en_US_POSIX"))
    }

    /// Whether the significand (before any exponent) has a digit other than zero.
    private static func hasNonZeroDigit(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in bytes {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return false }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }
}
