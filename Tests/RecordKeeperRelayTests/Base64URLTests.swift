import Foundation
import Testing

@testable import RecordKeeperRelay

/// Base64url without padding, strict: one text per byte string.
@Suite struct Base64URLTests {
    @Test func `bytes of every length round trip and match Foundation's alphabet swapped`() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(text == foundation)
            #expect(Base64URL.decode(Substring(text)) == bytes)
        }
    }

    @Test func `padding, other alphabets, stray characters and non-canonical endings are refused`() {
        for text in ["QQ==", "QQ=", "a+b/", "QQ Q", "Q", "QR", "QUJ", "QUI\n", "Zm9v!"] {
            let decoded = Base64URL.decode(Substring(text))
            if text == "QUJ" {
                #expect(decoded == nil, "QUJ has unused bits set")
            } else {
                #expect(decoded == nil, "\(text) was accepted")
            }
        }
        #expect(Base64URL.decode("QUI") == Array("AB".utf8))
        #expect(Base64URL.decode("QQ") == Array("A".utf8))
        #expect(Base64URL.decode("") == [])
    }
}
