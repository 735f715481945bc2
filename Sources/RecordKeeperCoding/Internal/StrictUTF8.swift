/// Text from bytes that must be UTF-8: nil when they are not, where `String(decoding:as:)`
/// would replace the invalid bytes with U+FFFD and read another text (a record key, a
/// command-line argument).
package enum StrictUTF8 {
    /// `bytes` as text when they are valid UTF-8, else nil. (`String(validating:as:)` needs
    /// macOS 15 / iOS 18; older systems compare the decoded text with the bytes.)
    @inlinable
    package static func string<Bytes: Collection>(_ bytes: Bytes) -> String? where Bytes.Element == UInt8 {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            return String(validating: bytes, as: UTF8.self)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.utf8.elementsEqual(bytes) ? text : nil
    }
}
