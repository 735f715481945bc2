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
        let collections = settings.value("collections").map { list in
            Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
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
}
