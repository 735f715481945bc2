import Foundation

/// What a verified token lets its holder do, from its claims (docs/RELAY.md "Tokens"):
///
/// - `space` (required, a non-empty string): the one space the token reads and writes. The
///   space of every request is this one; a request naming another is refused.
/// - `read_only` (optional Boolean, default `false`): pulls only; pushes are refused.
/// - `collections` (optional array of strings): the only collections the token may push to and
///   pull from; without it, every collection of the space.
public struct RelayAccess: Sendable, Equatable {
    /// The token's space, in Unicode Normalization Form C: the space is a name like the
    /// store's (docs/SYNC.md, "Space names are normalized"), so "café" typed precomposed or
    /// decomposed is one space on the server, whichever form the token's issuer wrote.
    public let space: String
    /// Whether the token may only pull.
    public let readOnly: Bool
    /// The collections allowed (in NFC, as the store names them), or `nil` for all.
    public let collections: Set<String>?

    /// Creates an access (for tests and issuers); names are normalized to NFC.
    public init(space: String, readOnly: Bool = false, collections: Set<String>? = nil) {
        self.space = Self.normalized(space)
        self.readOnly = readOnly
        self.collections = collections.map { Set($0.map(Self.normalized)) }
    }

    /// Reads the relay's claims.
    ///
    /// - Throws: ``JWTError/missingClaim(_:)`` without `space`; ``JWTError/malformed(_:)`` when a
    ///   claim has the wrong type.
    public init(claims: JWTClaims) throws(JWTError) {
        guard let space = claims["space"] else { throw .missingClaim("space") }
        guard let name = space.string, !name.isEmpty, !name.utf8.contains(0) else {
            throw .malformed("the space claim is not a non-empty string")
        }
        self.space = Self.normalized(name)
        switch claims["read_only"] {
        case nil: readOnly = false
        case .bool(let value)?: readOnly = value
        default: throw .malformed("the read_only claim is not a Boolean")
        }
        switch claims["collections"] {
        case nil: collections = nil
        case .array(let values)?:
            collections = Set(try values.map { value throws(JWTError) in
                guard let name = value.string else { throw .malformed("the collections claim holds a non-string") }
                return Self.normalized(name)
            })
        default: throw .malformed("the collections claim is not an array of strings")
        }
    }

    /// `name` in Unicode Normalization Form C (as `RecordNames` normalizes the store's names).
    static func normalized(_ name: String) -> String {
        name.utf8.allSatisfy { $0 < 0x80 } ? name : name.precomposedStringWithCanonicalMapping
    }

    /// Whether `name` is the token's space, in whichever normalization form it is written.
    func isSpace(_ name: String) -> Bool {
        Self.normalized(name) == space
    }

    /// Whether the token may read and write `collection`.
    public func allows(_ collection: String) -> Bool {
        collections?.contains(collection) ?? true
    }

    /// The claims of a token granting this access, to sign with ``JWTSigner``.
    public func claims(expiresAt: Double) -> [String: JWTJSONValue] {
        var claims: [String: JWTJSONValue] = ["space": .string(space), "exp": .number(expiresAt)]
        if readOnly { claims["read_only"] = .bool(true) }
        if let collections { claims["collections"] = .array(collections.sorted().map { .string($0) }) }
        return claims
    }
}
