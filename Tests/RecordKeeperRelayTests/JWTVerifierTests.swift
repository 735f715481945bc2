import Foundation
import RecordKeeperRelay
import TestHelpers
import Testing

/// JWT verification (RFC 7515/7519/8725) against the RFCs' own examples and against every way
/// a token can be wrong.
@Suite struct JWTVerifierTests {
    // RFC 7515 appendix A.1: HS256. The key is the JWK's "k", base64url.
    static let rfcHS256Key = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"
    static let rfcHS256Token =
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    // RFC 7515 appendix A.3: ES256. The public key is the JWK's x and y as SubjectPublicKeyInfo:
    // 3059301306072a8648ce3d020106082a8648ce3d030107034200 04 || x || y.
    static let rfcES256PublicKey = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEf83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEXH8UTNG72bfocs3+257rn0s2ldbqkLJK2KRiMohYjlrQ==
        -----END PUBLIC KEY-----
        """
    static let rfcES256Token =
        "eyJhbGciOiJFUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    /// The examples' `exp`.
    static let rfcExpiry: TimeInterval = 1_300_819_380

    static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func bytes(base64URL text: String) -> [UInt8] {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Array(Data(base64Encoded: standard)!)
    }

    static let secret = Array("a shared secret of at least 32 bytes!".utf8)

    private func verifier(
        _ key: JWTVerificationKey, at time: TimeInterval, _ configure: (inout JWTVerifier.Configuration) -> Void = { _ in }
    ) -> JWTVerifier {
        var configuration = JWTVerifier.Configuration(key: key)
        configuration.now = { Date(timeIntervalSince1970: time) }
        configure(&configuration)
        return JWTVerifier(configuration)
    }

    private func refusal(_ verifier: JWTVerifier, _ token: String) -> JWTError? {
        do {
            _ = try verifier.verify(token)
            return nil
        } catch {
            #expect(!error.description.contains(token), "the error echoes the token")
            for part in token.split(separator: ".") where part.count > 8 {
                #expect(!error.description.contains(part), "the error echoes part of the token")
            }
            return error
        }
    }

    /// A token signed with `secret`, from header and claims JSON written out.
    private func hs256Token(header: String, claims: String, secret: [UInt8] = Self.secret) throws -> String {
        try JWTSigner(key: .hs256(secret: secret)).sign(headerJSON: Data(header.utf8), claimsJSON: Data(claims.utf8))
    }

    @Test func `the RFC 7515 HS256 example verifies and its claims read back`() throws {
        let key = try JWTVerificationKey.hs256(secret: Self.bytes(base64URL: Self.rfcHS256Key))
        let claims = try verifier(key, at: Self.rfcExpiry - 100).verify(Self.rfcHS256Token)
        #expect(claims.issuer == "joe")
        #expect(claims.expiresAt == Date(timeIntervalSince1970: Self.rfcExpiry))
        #expect(claims["http://example.com/is_root"] == .bool(true))
    }

    @Test func `the RFC 7515 ES256 example verifies with its public key`() throws {
        let key = try JWTVerificationKey.es256(publicKeyPEM: Self.rfcES256PublicKey)
        let claims = try verifier(key, at: Self.rfcExpiry - 100).verify(Self.rfcES256Token)
        #expect(claims.issuer == "joe")
    }

    @Test func `expiry is checked with the clock-skew allowance`() throws {
        let key = try JWTVerificationKey.hs256(secret: Self.bytes(base64URL: Self.rfcHS256Key))
        #expect(throws: Never.self) { try verifier(key, at: Self.rfcExpiry + 59).verify(Self.rfcHS256Token) }
        let expired = refusal(verifier(key, at: Self.rfcExpiry + 60), Self.rfcHS256Token)
        #expect(expired == .expired(at: Date(timeIntervalSince1970: Self.rfcExpiry)))
        #expect(expired?.description == "the token expired at 2011-03-22T18:43:00Z")
        let strict = refusal(verifier(key, at: Self.rfcExpiry + 1) { $0.leeway = .zero }, Self.rfcHS256Token)
        #expect(strict?.reason == "expired")
    }

    @Test func `a token not valid yet is refused beyond the allowance`() throws {
        let key = try JWTVerificationKey.hs256(secret: Self.secret)
        let token = try hs256Token(header: #"{"alg":"HS256"}"#, claims: #"{"exp":2000,"nbf":1000}"#)
        #expect(refusal(verifier(key, at: 939), token) == .notYetValid(until: Date(timeIntervalSince1970: 1000)))
        #expect(throws: Never.self) { try verifier(key, at: 940).verify(token) }
    }

    @Test func `alg none and algorithm confusion are refused before the signature is looked at`() throws {
        let hs = try JWTVerificationKey.hs256(secret: Self.secret)
        let none = Self.base64URL(Data(#"{"alg":"none"}"#.utf8)) + "." + Self.base64URL(Data(#"{"exp":9999999999}"#.utf8)) + "."
        #expect(refusal(verifier(hs, at: 0), none) == .wrongAlgorithm(expected: .hs256, found: "none"))
        // HS256 "signed" with the ES256 public key's PEM text, for a verifier that holds that key.
        let es = try JWTVerificationKey.es256(publicKeyPEM: Self.rfcES256PublicKey)
        let confused = try hs256Token(
            header: #"{"alg":"HS256"}"#, claims: #"{"exp":9999999999}"#, secret: Array(Self.rfcES256PublicKey.utf8))
        let error = refusal(verifier(es, at: 0), confused)
        #expect(error == .wrongAlgorithm(expected: .es256, found: "HS256"))
        #expect(error?.description == "the token is signed with 'HS256'; only ES256 is accepted")
        #expect(refusal(verifier(hs, at: Self.rfcExpiry - 1), Self.rfcES256Token)?.reason == "wrong_algorithm")
    }

    @Test func `a changed claim, signature or key is a bad signature`() throws {
        let key = try JWTVerificationKey.hs256(secret: Self.bytes(base64URL: Self.rfcHS256Key))
        let parts = Self.rfcHS256Token.split(separator: ".").map(String.init)
        let otherClaims = Self.base64URL(Data(#"{"iss":"mallory","exp":1300819380}"#.utf8))
        #expect(refusal(verifier(key, at: 0), [parts[0], otherClaims, parts[2]].joined(separator: ".")) == .badSignature)
        var signature = Self.bytes(base64URL: parts[2])
        signature[0] ^= 1
        #expect(refusal(verifier(key, at: 0), [parts[0], parts[1], Self.base64URL(signature)].joined(separator: ".")) == .badSignature)
        #expect(refusal(verifier(key, at: 0), [parts[0], parts[1], Self.base64URL(signature.prefix(31))].joined(separator: ".")) == .badSignature)
        let otherKey = try JWTVerificationKey.hs256(secret: Self.secret)
        #expect(refusal(verifier(otherKey, at: 0), Self.rfcHS256Token) == .badSignature)
        // ES256: a flipped bit of r.
        let es = try JWTVerificationKey.es256(publicKeyPEM: Self.rfcES256PublicKey)
        let esParts = Self.rfcES256Token.split(separator: ".").map(String.init)
        var esSignature = Self.bytes(base64URL: esParts[2])
        esSignature[5] ^= 0x40
        #expect(refusal(verifier(es, at: 0), [esParts[0], esParts[1], Self.base64URL(esSignature)].joined(separator: ".")) == .badSignature)
    }

    @Test func `issuer and audience are checked when configured`() throws {
        let key = try JWTVerificationKey.hs256(secret: Self.secret)
        let one = try hs256Token(header: #"{"alg":"HS256"}"#, claims: #"{"exp":2000,"iss":"auth","aud":"relay"}"#)
        let many = try hs256Token(header: #"{"alg":"HS256"}"#, claims: #"{"exp":2000,"aud":["other","relay"]}"#)
        let none = try hs256Token(header: #"{"alg":"HS256"}"#, claims: #"{"exp":2000}"#)
        let audience = verifier(key, at: 1000) { $0.audience = "relay" }
        #expect(throws: Never.self) { try audience.verify(one) }
        #expect(throws: Never.self) { try audience.verify(many) }
        #expect(refusal(audience, none) == .wrongAudience)
        #expect(refusal(verifier(key, at: 1000) { $0.audience = "billing" }, many) == .wrongAudience)
        #expect(refusal(verifier(key, at: 1000) { $0.issuer = "other" }, one) == .wrongIssuer)
        #expect(refusal(verifier(key, at: 1000) { $0.issuer = "auth" }, none) == .wrongIssuer)
        #expect(throws: Never.self) { try verifier(key, at: 1000) { $0.issuer = "auth" }.verify(one) }
    }

    @Test func `malformed tokens say what is wrong`() throws {
        let key = try JWTVerificationKey.hs256(secret: Self.secret)
        let check = verifier(key, at: 1000)
        let claims = Self.base64URL(Data(#"{"exp":2000}"#.utf8))
        let cases: [(String, String)] = [
            ("only.two", "it is not three dot-separated parts"),
            ("a.b.c.d.e", "it is encrypted (JWE), not signed"),
            ("e30=.\(claims).x", "the header is not base64url"),
            ("ey*.\(claims).x", "the header is not base64url"),
            (Self.base64URL(Data("[1]".utf8)) + ".\(claims).x", "the header is not a JSON object"),
            (Self.base64URL(Data("{\"alg\":".utf8)) + ".\(claims).x", "the header is not valid JSON"),
            (Self.base64URL(Data(#"{"typ":"JWT"}"#.utf8)) + ".\(claims).x", "the header has no alg"),
            (Self.base64URL(Data(#"{"alg":7}"#.utf8)) + ".\(claims).x", "the header's alg is not a string"),
            (String(repeating: "a", count: 9000), "it is longer than 8192 bytes"),
        ]
        for (token, message) in cases {
            guard case .malformed(let what)? = refusal(check, token) else {
                Issue.record("\(message): not refused as malformed")
                continue
            }
            #expect(what.hasPrefix(message), "\(what)")
        }
        let duplicate = try hs256Token(header: #"{"alg":"HS256","alg":"none"}"#, claims: #"{"exp":2000}"#)
        #expect(refusal(check, duplicate)?.description.contains("appears twice") == true)
        let critical = try hs256Token(header: #"{"alg":"HS256","crit":["exp"]}"#, claims: #"{"exp":2000}"#)
        #expect(refusal(check, critical)?.reason == "malformed")
        let otherType = try hs256Token(header: #"{"alg":"HS256","typ":"dpop+jwt"}"#, claims: #"{"exp":2000}"#)
        #expect(refusal(check, otherType) == .malformed("the header's typ is not JWT"))
        let noExpiry = try hs256Token(header: #"{"alg":"HS256"}"#, claims: #"{"sub":"x"}"#)
        #expect(refusal(check, noExpiry) == .missingClaim("exp"))
        let textExpiry = try hs256Token(header: #"{"alg":"HS256"}"#, claims: #"{"exp":"2000"}"#)
        #expect(refusal(check, textExpiry) == .malformed("the exp claim is not a number of seconds"))
        let duplicateClaim = try hs256Token(header: #"{"alg":"HS256"}"#, claims: #"{"exp":2000,"exp":9999999999}"#)
        #expect(refusal(check, duplicateClaim)?.reason == "malformed")
    }

    @Test func `kid, jku and an embedded jwk never choose the key`() throws {
        let key = try JWTVerificationKey.hs256(secret: Self.secret)
        let attacker = Array("the attacker's own secret, 32 bytes+".utf8)
        let pointing = try hs256Token(
            header: #"{"alg":"HS256","kid":"../../etc/passwd","jku":"https://evil.example/keys","x5u":"https://evil.example/c","#
                + #""jwk":{"kty":"oct","k":"dGhlIGF0dGFja2VyJ3Mgb3duIHNlY3JldCwgMzIgYnl0ZXMr"}}"#,
            claims: #"{"exp":2000}"#, secret: attacker)
        #expect(refusal(verifier(key, at: 1000), pointing) == .badSignature)
        let honest = try hs256Token(header: #"{"alg":"HS256","kid":"anything"}"#, claims: #"{"exp":2000}"#)
        #expect(throws: Never.self) { try verifier(key, at: 1000).verify(honest) }
    }

    @Test func `tokens the signer mints verify, HS256 and ES256 with a generated key`() async throws {
        try await withTemporaryDirectory { directory in
            let hs = JWTSigner(key: try .hs256(secret: Self.secret))
            let claims: [String: JWTJSONValue] = [
                "space": .string("alice"), "exp": .number(5000), "aud": .array([.string("relay")]),
            ]
            let token = try hs.sign(claims)
            let verified = try verifier(.hs256(secret: Self.secret), at: 1000).verify(token)
            #expect(verified["space"] == .string("alice"))
            #expect(verified.audience == ["relay"])
            #expect(token.split(separator: ".").first == Substring(Self.base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))))

            let pair = try OpenSSLTool.p256KeyPair(in: directory)
            let es = JWTSigner(key: try .es256(privateKeyPEM: pair.privateKey))
            let esToken = try es.sign(claims)
            #expect(Self.bytes(base64URL: String(esToken.split(separator: ".")[2])).count == 64)
            let esVerified = try verifier(.es256(publicKeyPEM: pair.publicKey), at: 1000).verify(esToken)
            #expect(esVerified["space"] == .string("alice"))
            let other = try OpenSSLTool.p256KeyPair(in: directory, name: "other")
            let otherKey = try JWTVerificationKey.es256(publicKeyPEM: other.publicKey)
            #expect(refusal(verifier(otherKey, at: 1000), esToken) == .badSignature)
        }
    }

    @Test func `keys that cannot be used are refused with the reason`() async throws {
        #expect(throws: JWTKeyError.self) { try JWTVerificationKey.hs256(secret: Array("short".utf8)) }
        #expect(throws: JWTKeyError.self) { try JWTVerificationKey.es256(publicKeyPEM: "not a key") }
        try await withTemporaryDirectory { directory in
            try OpenSSLTool.run(["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "p384.key"], in: directory)
            try OpenSSLTool.run(["ec", "-in", "p384.key", "-pubout", "-out", "p384.pub"], in: directory)
            let p384 = try String(contentsOf: directory.appendingPathComponent("p384.pub"), encoding: .utf8)
            #expect(throws: JWTKeyError("the ES256 public key is not on the P-256 curve")) {
                try JWTVerificationKey.es256(publicKeyPEM: p384)
            }
            try OpenSSLTool.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "rsa.key"], in: directory)
            try OpenSSLTool.run(["pkey", "-in", "rsa.key", "-pubout", "-out", "rsa.pub"], in: directory)
            let rsa = try String(contentsOf: directory.appendingPathComponent("rsa.pub"), encoding: .utf8)
            #expect(throws: JWTKeyError("the ES256 public key is not an elliptic-curve key")) {
                try JWTVerificationKey.es256(publicKeyPEM: rsa)
            }
        }
    }
}
