/// The key a ``JWTVerifier`` checks signatures with; it also pins the algorithm.
///
/// ```swift
/// let hs = try JWTVerificationKey.hs256(secret: Array(secretFileContents))
/// let es = try JWTVerificationKey.es256(publicKeyPEM: pem)
/// ```
public struct JWTVerificationKey: Sendable {
    enum Material: Sendable {
        case secret([UInt8])
        case publicKey(ECP256Key)
    }

    /// The one algorithm tokens must be signed with.
    public let algorithm: JWTAlgorithm
    let material: Material

    /// A shared secret for HS256.
    ///
    /// - Throws: ``JWTKeyError`` when the secret is shorter than 32 bytes (RFC 7518 §3.2: a key
    ///   as long as the hash).
    public static func hs256(secret: [UInt8]) throws(JWTKeyError) -> JWTVerificationKey {
        try checkSecret(secret)
        return JWTVerificationKey(algorithm: .hs256, material: .secret(secret))
    }

    /// A P-256 public key, PEM (`-----BEGIN PUBLIC KEY-----`), for ES256.
    ///
    /// - Throws: ``JWTKeyError`` when it is not a PEM public key on P-256.
    public static func es256(publicKeyPEM: String) throws(JWTKeyError) -> JWTVerificationKey {
        JWTVerificationKey(algorithm: .es256, material: .publicKey(try .publicKey(pem: publicKeyPEM)))
    }

    static func checkSecret(_ secret: [UInt8]) throws(JWTKeyError) {
        if secret.count < 32 {
            throw JWTKeyError("an HS256 secret needs at least 32 bytes; this one has \(secret.count)")
        }
    }

    func verify(_ signature: [UInt8], signingInput: [UInt8]) -> Bool {
        switch material {
        case .secret(let secret): HMACSHA256.verify(signature, message: signingInput, key: secret)
        case .publicKey(let key): key.verify(signature, message: signingInput)
        }
    }
}

/// The key a ``JWTSigner`` signs with.
public struct JWTSigningKey: Sendable {
    enum Material: Sendable {
        case secret([UInt8])
        case privateKey(ECP256Key)
    }

    /// The algorithm of the tokens it signs.
    public let algorithm: JWTAlgorithm
    let material: Material

    /// A shared secret for HS256 (at least 32 bytes).
    ///
    /// - Throws: ``JWTKeyError`` when the secret is too short.
    public static func hs256(secret: [UInt8]) throws(JWTKeyError) -> JWTSigningKey {
        try JWTVerificationKey.checkSecret(secret)
        return JWTSigningKey(algorithm: .hs256, material: .secret(secret))
    }

    /// A P-256 private key, PEM (`BEGIN PRIVATE KEY` or `BEGIN EC PRIVATE KEY`), for ES256.
    ///
    /// - Throws: ``JWTKeyError`` when it is not an unencrypted PEM private key on P-256.
    public static func es256(privateKeyPEM: String) throws(JWTKeyError) -> JWTSigningKey {
        JWTSigningKey(algorithm: .es256, material: .privateKey(try .privateKey(pem: privateKeyPEM)))
    }

    func sign(_ signingInput: [UInt8]) throws(JWTKeyError) -> [UInt8] {
        switch material {
        case .secret(let secret):
            guard let mac = HMACSHA256.authenticate(signingInput, key: secret) else {
                throw JWTKeyError("HMAC-SHA256 failed (out of memory)")
            }
            return mac
        case .privateKey(let key):
            return try key.sign(signingInput)
        }
    }
}
