internal import CCrypto

/// A P-256 key (public, or private with its public half) in OpenSSL's libcrypto, for ES256.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never modified after it is loaded, and OpenSSL 3
/// allows a key that is not modified to be used by several threads at once (each signature
/// makes its own `EVP_MD_CTX`; see openssl-threads(7)).
final class ECP256Key: @unchecked Sendable {
    private let key: OpaquePointer
    let isPrivate: Bool

    private init(key: OpaquePointer, isPrivate: Bool) {
        self.key = key
        self.isPrivate = isPrivate
    }

    deinit { EVP_PKEY_free(key) }

    /// Loads a public key from PEM (`-----BEGIN PUBLIC KEY-----`, SubjectPublicKeyInfo).
    static func publicKey(pem: String) throws(JWTKeyError) -> ECP256Key {
        try load(pem: pem, isPrivate: false)
    }

    /// Loads a private key from PEM (`BEGIN PRIVATE KEY` or `BEGIN EC PRIVATE KEY`, unencrypted).
    static func privateKey(pem: String) throws(JWTKeyError) -> ECP256Key {
        try load(pem: pem, isPrivate: true)
    }

    private static func load(pem: String, isPrivate: Bool) throws(JWTKeyError) -> ECP256Key {
        let what = isPrivate ? "private key" : "public key"
        let bytes = Array(pem.utf8)
        ERR_clear_error()
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return isPrivate ? PEM_read_bio_PrivateKey(bio, nil, nil, nil) : PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let loaded else {
            throw JWTKeyError("the ES256 \(what) is not a PEM \(what)\(openSSLReason())")
        }
        let key = ECP256Key(key: loaded, isPrivate: isPrivate)
        guard EVP_PKEY_get_base_id(loaded) == EVP_PKEY_EC else {
            throw JWTKeyError("the ES256 \(what) is not an elliptic-curve key")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(loaded, &name, name.count, &length) == 1,
            String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else {
            throw JWTKeyError("the ES256 \(what) is not on the P-256 curve")
        }
        return key
    }

    /// Whether `signature` (JWS form: `r || s`, 32 bytes each) signs `message` with SHA-256.
    func verify(_ signature: [UInt8], message: [UInt8]) -> Bool {
        // A refused signature leaves its reasons on this thread's error queue: cleared on
        // every way out, so no later call reads them as its own.
        defer { ERR_clear_error() }
        guard signature.count == 64, let der = Self.derSignature(raw: signature) else { return false }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        let result = der.withUnsafeBufferPointer { derBytes in
            message.withUnsafeBufferPointer { messageBytes in
                EVP_DigestVerify(context, derBytes.baseAddress, derBytes.count, messageBytes.baseAddress, messageBytes.count)
            }
        }
        return result == 1
    }

    /// The JWS signature (`r || s`) of `message` with SHA-256.
    func sign(_ message: [UInt8]) throws(JWTKeyError) -> [UInt8] {
        guard isPrivate else { throw JWTKeyError("signing needs the private key") }
        guard let context = EVP_MD_CTX_new() else { throw JWTKeyError("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        ERR_clear_error()
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw JWTKeyError("cannot sign with the key\(openSSLReason())")
        }
        var length = 0
        let sized = message.withUnsafeBufferPointer {
            EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count)
        }
        guard sized == 1 else { throw JWTKeyError("cannot sign\(openSSLReason())") }
        var der = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBufferPointer {
            EVP_DigestSign(context, &der, &length, $0.baseAddress, $0.count)
        }
        guard signed == 1, let raw = Self.rawSignature(der: Array(der.prefix(length))) else {
            throw JWTKeyError("cannot sign\(openSSLReason())")
        }
        return raw
    }

    /// `r || s` as the DER `ECDSA-Sig-Value` OpenSSL verifies.
    private static func derSignature(raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {  // takes r and s
            BN_free(r)
            BN_free(s)
            return nil
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else { return nil }
        defer { recordkeeper_openssl_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// The DER signature OpenSSL makes, as `r || s` (each left-padded to 32 bytes).
    private static func rawSignature(der: [UInt8]) -> [UInt8]? {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { bytes in
            var cursor = bytes.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, bytes.count)
        }
        guard let parsed else { return nil }
        defer { ECDSA_SIG_free(parsed) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(parsed, &r, &s)
        guard let r, let s else { return nil }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(r, buffer.baseAddress, 32), BN_bn2binpad(s, buffer.baseAddress! + 32, 32))
        }
        guard written == (32, 32) else { return nil }
        return raw
    }
}

/// OpenSSL's reason for the last failure, as ": reason", or "".
func openSSLReason() -> String {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else { return "" }
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buffer, buffer.count)
    return ": " + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
