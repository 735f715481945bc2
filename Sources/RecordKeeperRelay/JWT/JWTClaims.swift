public import Foundation

/// The claims of a verified token: the registered ones (RFC 7519 §4.1) read and typed, and
/// every claim by name.
public struct JWTClaims: Sendable, Equatable {
    /// Every claim, by name.
    public let all: [String: JWTJSONValue]
    /// `exp`: when the token expires (required).
    public let expiresAt: Date
    /// `nbf`: when the token becomes valid.
    public let notBefore: Date?
    /// `iat`: when the token was issued.
    public let issuedAt: Date?
    /// `iss`.
    public let issuer: String?
    /// `sub`.
    public let subject: String?
    /// `aud`, a string or an array of strings in the token; empty when absent.
    public let audience: [String]

    /// The claim `name`, or `nil`.
    public subscript(name: String) -> JWTJSONValue? { all[name] }

    /// Reads the registered claims of `all`.
    ///
    /// - Throws: ``JWTError/missingClaim(_:)`` without `exp`; ``JWTError/malformed(_:)`` when a
    ///   registered claim has the wrong type.
    init(_ all: [String: JWTJSONValue]) throws(JWTError) {
        self.all = all
        guard let exp = all["exp"] else { throw .missingClaim("exp") }
        expiresAt = try Self.date(exp, "exp")
        notBefore = try all["nbf"].map { value throws(JWTError) in try Self.date(value, "nbf") }
        issuedAt = try all["iat"].map { value throws(JWTError) in try Self.date(value, "iat") }
        issuer = try Self.string(all["iss"], "iss")
        subject = try Self.string(all["sub"], "sub")
        switch all["aud"] {
        case nil: audience = []
        case .string(let one)?: audience = [one]
        case .array(let many)?:
            audience = try many.map { value throws(JWTError) in
                guard let text = value.string else { throw .malformed("the aud claim holds a non-string") }
                return text
            }
        default: throw .malformed("the aud claim is neither a string nor an array of strings")
        }
    }

    /// A NumericDate (RFC 7519 §2): seconds since 1970, possibly fractional.
    private static func date(_ value: JWTJSONValue, _ name: String) throws(JWTError) -> Date {
        guard let seconds = value.number, seconds.isFinite else {
            throw .malformed("the \(name) claim is not a number of seconds")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    private static func string(_ value: JWTJSONValue?, _ name: String) throws(JWTError) -> String? {
        guard let value else { return nil }
        guard let text = value.string else { throw .malformed("the \(name) claim is not a string") }
        return text
    }
}
