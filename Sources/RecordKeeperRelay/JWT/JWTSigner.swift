package import Foundation
import RecordKeeperCoding

/// Mints tokens: for `recordkeeper-relay token`, for tests, and for an operator's own issuer.
///
/// ```swift
/// let signer = JWTSigner(key: try .hs256(secret: secret))
/// let token = try signer.sign([
///     "space": .string("alice"),
///     "exp": .number(Date().timeIntervalSince1970 + 3600),
/// ])
/// ```
public struct JWTSigner: Sendable {
    /// The key (and algorithm) tokens are signed with.
    public let key: JWTSigningKey

    /// Creates a signer.
    public init(key: JWTSigningKey) {
        self.key = key
    }

    /// A compact JWS of `claims` with the header `{"alg":…,"typ":"JWT"}`.
    ///
    /// - Throws: ``JWTKeyError`` when signing fails; `EncodingError` when a claim is a
    ///   non-finite number.
    public func sign(_ claims: [String: JWTJSONValue]) throws -> String {
        let header: [String: JWTJSONValue] = ["alg": .string(key.algorithm.rawValue), "typ": .string("JWT")]
        let encoder = RecordJSONEncoder()
        return try sign(
            headerJSON: try encoder.encode(JWTJSONValue.object(header)),
            claimsJSON: try encoder.encode(JWTJSONValue.object(claims)))
    }

    /// A compact JWS of header and claims given as bytes, exactly as written (for tests of
    /// tokens other issuers might make: duplicate names, odd headers).
    package func sign(headerJSON: Data, claimsJSON: Data) throws(JWTKeyError) -> String {
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
