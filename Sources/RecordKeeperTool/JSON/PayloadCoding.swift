import Foundation
import RecordKeeperCoding

/// How payload bytes become text and JSON, and back.
///
/// A payload "is JSON" when it is one valid UTF-8 JSON value by both the codec's strict parser
/// and `JSONSerialization` (the same test on the way out and on the way in, so exports always
/// import). Other bytes are written as base64, marked: `{"$base64": "..."}` inside JSON, and a
/// `base64:` prefix in text output (no JSON value can start with `b`).
enum PayloadCoding {
    static let base64Key = "$base64"
    static let textBase64Prefix = "base64:"
    private static let markerPrefix = Array(#"{"$base64":"#.utf8)

    /// The compact form of `bytes` if they are one valid JSON value, else nil.
    static func compactJSON(_ bytes: [UInt8]) -> [UInt8]? {
        // Not JSON is an answer here, not a failure: such payloads are shown as base64.
        guard case .success(let compact) = JSONStream.compactValue(bytes) else { return nil }
        return acceptedByFoundation(compact) ? compact : nil
    }

    /// Whether Foundation's parser accepts the (already syntax-checked) compact JSON too.
    static func acceptedByFoundation(_ compact: [UInt8]) -> Bool {
        do {
            _ = try JSONSerialization.jsonObject(with: Data(compact), options: [.fragmentsAllowed])
            return true
        } catch {
            // A refusal is the answer this function exists to give.
            return false
        }
    }

    /// Whether compact JSON is an object whose only member is "$base64" (the base64 marker).
    static func isBase64Marker(_ compact: [UInt8]) -> Bool {
        guard compact.starts(with: markerPrefix) else { return false }
        return base64Text(inMarker: compact) != nil
    }

    /// The base64 text of a marker object, or nil when `compact` is not exactly a marker.
    static func base64Text(inMarker compact: [UInt8]) -> String? {
        guard compact.starts(with: markerPrefix), compact.last == UInt8(ascii: "}") else { return nil }
        let inner = compact[markerPrefix.count..<(compact.count - 1)]
        // Fast path: a plain string literal with no escapes and nothing after it.
        if inner.count >= 2, inner.first == UInt8(ascii: "\""), inner.last == UInt8(ascii: "\""),
           !inner.dropFirst().dropLast().contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return String(decoding: inner.dropFirst().dropLast(), as: UTF8.self)
        }
        do {
            let object = try JSONSerialization.jsonObject(with: Data(compact), options: [])
            guard let dictionary = object as? [String: Any], dictionary.count == 1,
                  let text = dictionary[base64Key] as? String else { return nil }
            return text
        } catch {
            // Checked with the strict parser already; Foundation refusing it means it is not a marker.
            return nil
        }
    }

    // MARK: Output

    /// The value as one line of text: compact JSON, or `base64:` and the bytes in base64.
    static func text(for data: Data) -> [UInt8] {
        let bytes = [UInt8](data)
        if let compact = compactJSON(bytes) { return compact }
        return Array((textBase64Prefix + data.base64EncodedString()).utf8)
    }

    /// The value inside an export or change set, such that importing it restores exactly the
    /// same bytes: the payload itself when it is JSON already in compact form (and not something
    /// that reads as a base64 marker), otherwise a base64 marker.
    static func exportJSON(for data: Data) -> [UInt8] {
        let bytes = [UInt8](data)
        if let compact = compactJSON(bytes), compact == bytes, !isBase64Marker(compact) {
            return bytes
        }
        return markerPrefix + Array(("\"" + data.base64EncodedString() + "\"}").utf8)
    }

    // MARK: Input

    enum ValueProblem: Error {
        case invalidBase64
        case rejectedByFoundation
    }

    /// The payload a JSON value in an import or change set stands for: the decoded bytes of a
    /// base64 marker, else the compact JSON itself (a string value keeps its quotes).
    /// - Parameter foundationCheck: false only when the same value passed this check before.
    static func payload(fromCompactJSON compact: [UInt8], foundationCheck: Bool = true) throws(ValueProblem) -> Data {
        if compact.first == UInt8(ascii: "{"), compact.starts(with: markerPrefix),
           let text = base64Text(inMarker: compact) {
            guard let decoded = StrictBase64.decode(text) else { throw .invalidBase64 }
            return decoded
        }
        guard !foundationCheck || acceptedByFoundation(compact) else { throw .rejectedByFoundation }
        return Data(compact)
    }
}

/// Writing JSON text: string literals and text-safe names.
enum JSONText {
    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped,
    /// everything else as UTF-8.
    static func quoted(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        out.reserveCapacity(text.utf8.count + 2)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }

    /// A collection name or key for one line of text output: control characters (tab, newline,
    /// ...) escaped as in JSON, so one record stays one line, and a backslash doubled, so that
    /// the escapes are unambiguous (`a\\tb` is a backslash and a t, `a\tb` a tab); everything
    /// else unchanged.
    static func displayName(_ name: String) -> String {
        guard name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" }) else {
            return name
        }
        return String(name.unicodeScalars.map { scalar -> String in
            switch scalar.value {
            case 0x5C: return "\\\\"
            case 0x0A: return "\\n"
            case 0x09: return "\\t"
            case 0x0D: return "\\r"
            case 0..<0x20, 0x7F: return "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                + String(scalar.value, radix: 16)
            default: return String(scalar)
            }
        }.joined())
    }
}

/// A name for a message, in quotes, escaped as ``JSONText/displayName(_:)`` does and shortened when long.
func quoted(_ name: String) -> String {
    let shown = name.count > 80 ? String(name.prefix(77)) + "…" : name
    return "\"" + JSONText.displayName(shown) + "\""
}
