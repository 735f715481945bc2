import Foundation
import RecordKeeperRelay
import RecordKeeperCommandLine

/// `recordkeeper-relay token --space S --secret-file F [--ttl SECONDS] [--read-only]`: prints
/// an HS256 token.
enum TokenCommand {
    static func run(_ settings: RelaySettings, now: Date = Date()) throws -> ExitCode {
        let space = try settings.required("space")
        if space.isEmpty { throw RelayToolError(.usage, "--space must not be empty") }
        let secret = try settings.secret(try settings.required("secret-file"))
        let ttl = try settings.seconds("ttl", default: 3600, minimum: 1) ?? 3600
        let collections = try settings.value("collections").map(Self.collections)
        let access = RelayAccess(space: space, readOnly: settings.arguments.has("read-only"), collections: collections)
        let issued = now.timeIntervalSince1970.rounded(.down)
        var claims = access.claims(expiresAt: issued + Double(ttl))
        claims["iat"] = .number(issued)
        if let issuer = settings.value("issuer") { claims["iss"] = .string(issuer) }
        if let audience = settings.value("audience") { claims["aud"] = .string(audience) }
        let key: JWTSigningKey
        do {
            key = try .hs256(secret: secret)
        } catch {
            throw RelayToolError(.configuration, "the secret file cannot be used: \(error.message)")
        }
        StandardStreams.write(try JWTSigner(key: key).sign(claims) + "\n")
        return .ok
    }

    /// The collections of `--collections a,b`: a token granting none would be refused every
    /// request, so an empty list, or an empty or repeated name in it, is a usage error (omit
    /// the option for a token of every collection).
    static func collections(_ list: String) throws -> Set<String> {
        let names = list.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if names.contains(where: \.isEmpty) {
            throw RelayToolError(
                .usage, "--collections \"\(list)\" holds an empty name: give names separated by commas, or omit "
                    + "--collections for a token of every collection")
        }
        let unique = Set(names)
        if unique.count != names.count {
            throw RelayToolError(.usage, "--collections \"\(list)\" names a collection twice")
        }
        return unique
    }
}
