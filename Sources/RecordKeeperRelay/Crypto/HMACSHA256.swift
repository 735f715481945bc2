internal import CCrypto

// libcrypto calls of the relay live in this folder only.

/// HMAC-SHA256 through OpenSSL's libcrypto.
enum HMACSHA256 {
    /// The MAC of `message` under `key` (32 bytes), or `nil` if libcrypto failed (out of
    /// memory).
    static func authenticate(_ message: [UInt8], key: [UInt8]) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                HMAC(
                    EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count), messageBytes.baseAddress,
                    messageBytes.count, &output, &length)
            }
        }
        guard result != nil, length == 32 else { return nil }
        return Array(output.prefix(Int(length)))
    }

    /// Whether `mac` is the MAC of `message` under `key`, compared in constant time
    /// (`CRYPTO_memcmp`).
    static func verify(_ mac: [UInt8], message: [UInt8], key: [UInt8]) -> Bool {
        guard let expected = authenticate(message, key: key), mac.count == expected.count else { return false }
        return mac.withUnsafeBytes { given in
            expected.withUnsafeBytes { computed in
                CRYPTO_memcmp(given.baseAddress, computed.baseAddress, computed.count) == 0
            }
        }
    }
}
