public import Foundation

/// Verifies JSON Web Tokens (RFC 7519) in JWS compact form (RFC 7515), following the best
/// current practices of RFC 8725.
///
/// ```swift
/// var configuration = JWTVerifier.Configuration(key: try .hs256(secret: secret))
/// configuration.audience = "recordkeeper-relay"
/// let claims = try JWTVerifier(configuration).verify(token)   // throws JWTError
/// ```
///
/// - The algorithm is the key's: a token whose header names another `alg` (`none`, or `HS256`
///   where an ES256 public key is configured: "algorithm confusion") is refused before its
///   signature is looked at. `kid`, `jku`, `x5u`, `jwk` and `x5c` never select or supply a
///   key; a `crit` header is refused (no extension is understood); `typ`, if present, must be
///   `JWT` or `at+jwt`.
/// - The signature is checked before any claim is read; HMACs are compared in constant time.
/// - `exp` is required; `exp` and `nbf` are checked with ``Configuration/leeway`` of clock
///   skew either way; `iss` and `aud` (a string or an array) are checked when configured.
/// - Tokens longer than 8 KiB are refused unread.
///
/// JSON is read with the library's own `RecordJSONDecoder`, refusing objects with duplicate
/// member names.
public struct JWTVerifier: Sendable {
    /// What a token must satisfy.
    public struct Configuration: Sendable {
        /// The key, which also pins the algorithm.
        public var key: JWTVerificationKey
        /// The required `iss`, if any.
        public var issuer: String?
        /// An audience `aud` must name, if any.
        public var audience: String?
        /// The clock skew allowed on `exp` and `nbf` (60 seconds by default).
        public var leeway: Duration = .seconds(60)
        /// The current time (tests inject their own).
        public var now: @Sendable () -> Date = { Date() }

        /// Creates a configuration for `key`.
        public init(key: JWTVerificationKey) {
            self.key = key
        }
    }

    /// The longest token accepted.
    public static let maximumLength = 8192

    public let configuration: Configuration

    /// Creates a verifier.
    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// The claims of `token` if it is valid now.
    ///
    /// - Throws: ``JWTError`` saying why it is not.
    public func verify(_ token: String) throws(JWTError) -> JWTClaims {
        let bytes = token.utf8
        if bytes.count > Self.maximumLength {
            throw .malformed("it is longer than \(Self.maximumLength) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .malformed(parts.count == 5 ? "it is encrypted (JWE), not signed" : "it is not three dot-separated parts")
        }
        guard let headerBytes = Base64URL.decode(parts[0]) else { throw .malformed("the header is not base64url") }
        let header = try JWTJSONValue.object(from: headerBytes, what: "header")
        try check(header)
        guard let signature = Base64URL.decode(parts[2]) else { throw .malformed("the signature is not base64url") }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard configuration.key.verify(signature, signingInput: signingInput) else { throw .badSignature }
        guard let payload = Base64URL.decode(parts[1]) else { throw .malformed("the claims are not base64url") }
        let claims = try JWTClaims(try JWTJSONValue.object(from: payload, what: "claims"))
        try checkTimes(claims)
        if let issuer = configuration.issuer, claims.issuer != issuer { throw .wrongIssuer }
        if let audience = configuration.audience, !claims.audience.contains(audience) { throw .wrongAudience }
        return claims
    }

    private func check(_ header: [String: JWTJSONValue]) throws(JWTError) {
        guard let algorithm = header["alg"] else { throw .malformed("the header has no alg") }
        guard let name = algorithm.string else { throw .malformed("the header's alg is not a string") }
        let expected = configuration.key.algorithm
        guard name == expected.rawValue else { throw .wrongAlgorithm(expected: expected, found: name) }
        if header["crit"] != nil { throw .malformed("the header lists critical extensions (crit), which are not supported") }
        if let type = header["typ"] {
            guard let text = type.string, ["jwt", "at+jwt", "application/at+jwt"].contains(text.lowercased()) else {
                throw .malformed("the header's typ is not JWT")
            }
        }
    }

    private func checkTimes(_ claims: JWTClaims) throws(JWTError) {
        let now = configuration.now()
        let leeway = Double(configuration.leeway.components.seconds)
            + Double(configuration.leeway.components.attoseconds) / 1e18
        if now.timeIntervalSince(claims.expiresAt) >= leeway { throw .expired(at: claims.expiresAt) }
        if let notBefore = claims.notBefore, notBefore.timeIntervalSince(now) > leeway {
            throw .notYetValid(until: notBefore)
        }
    }
}
