public import Foundation

/// Why a token was refused. Descriptions say exactly why, and never contain the token (values
/// read from a token's header are shortened and stripped of control characters).
public enum JWTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a JWS compact serialization of JSON objects, or a claim of the wrong type.
    case malformed(String)
    /// The header's `alg` is not the one this verifier is configured for (`none` included).
    case wrongAlgorithm(expected: JWTAlgorithm, found: String)
    /// The signature does not match the header and claims under the configured key.
    case badSignature
    /// `exp` (plus the clock-skew allowance) has passed.
    case expired(at: Date)
    /// `nbf` (minus the clock-skew allowance) has not come yet.
    case notYetValid(until: Date)
    /// `iss` is not the configured issuer.
    case wrongIssuer
    /// `aud` does not name the configured audience.
    case wrongAudience
    /// A required claim is missing (`exp`, or one the relay requires such as `space`).
    case missingClaim(String)

    /// A short stable name for logs and metrics: `malformed`, `wrong_algorithm`,
    /// `bad_signature`, `expired`, `not_yet_valid`, `wrong_issuer`, `wrong_audience`,
    /// `missing_claim`.
    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .wrongAlgorithm: "wrong_algorithm"
        case .badSignature: "bad_signature"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .wrongIssuer: "wrong_issuer"
        case .wrongAudience: "wrong_audience"
        case .missingClaim: "missing_claim"
        }
    }

    public var description: String {
        switch self {
        case .malformed(let what): "the token is malformed: \(what)"
        case .wrongAlgorithm(let expected, let found):
            "the token is signed with \(Self.shown(found)); only \(expected.rawValue) is accepted"
        case .badSignature: "the token's signature is not valid"
        case .expired(let date): "the token expired at \(Self.format(date))"
        case .notYetValid(let date): "the token is not valid before \(Self.format(date))"
        case .wrongIssuer: "the token is from another issuer"
        case .wrongAudience: "the token is meant for another audience"
        case .missingClaim(let name): "the token has no \(name) claim"
        }
    }

    /// A value taken from a token, safe to show: at most 32 characters, printable ASCII.
    static func shown(_ value: String) -> String {
        let printable = value.unicodeScalars.prefix(32).map { scalar in
            scalar.isASCII && scalar.value >= 0x20 && scalar.value < 0x7F ? Character(scalar) : "?"
        }
        return "'" + String(printable) + (value.unicodeScalars.count > 32 ? "…" : "") + "'"
    }

    private static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}

/// Why a key or secret cannot be used.
public struct JWTKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, with OpenSSL's reason when it gave one.
    public let message: String

    package init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// A JWS algorithm a verifier can be pinned to.
public enum JWTAlgorithm: String, Sendable, Hashable, CaseIterable {
    /// HMAC with SHA-256 and a shared secret of at least 32 bytes (RFC 7518 §3.2).
    case hs256 = "HS256"
    /// ECDSA on P-256 with SHA-256; the signature is `r || s`, 64 bytes (RFC 7518 §3.4).
    case es256 = "ES256"
}
