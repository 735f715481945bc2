extension SyncRelay {
    /// The access the request's bearer token grants.
    ///
    /// - Throws: ``RelayRefusal`` with 401: no `Authorization: Bearer` header, or a token the
    ///   verifier refuses (the reason is in the body, never the token).
    func authorize(_ headers: HTTPHeaders) throws(RelayRefusal) -> RelayAccess {
        guard let header = headers["Authorization"] else {
            throw RelayResponses.unauthorized("no bearer token (Authorization: Bearer …)", reason: "no_token", invalidToken: false)
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw RelayResponses.unauthorized(
                "the Authorization header is not a bearer token", reason: "no_token", invalidToken: false)
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        do {
            return try RelayAccess(claims: try configuration.verifier.verify(token))
        } catch {
            throw RelayResponses.unauthorized(error.description, reason: error.reason, invalidToken: true)
        }
    }

    /// Refuses a request that names a space other than the token's.
    func requireSpace(_ named: String?, of access: RelayAccess) throws(RelayRefusal) {
        guard let named, !access.isSpace(named) else { return }
        throw RelayResponses.forbidden(
            "the token does not grant space \(JWTError.shown(named))", reason: "other_space", space: access.space)
    }

    /// Runs `body` for the access the request's token grants, and turns a refusal into its
    /// response (counted in the metrics, with the token's space, when known, and the refusal's
    /// fixed reason name in the log line: `space=alice reason=expired`; never the token).
    func authorized(
        _ request: HTTPRequest, _ body: (RelayAccess) async throws(RelayRefusal) -> HTTPResponse
    ) async -> HTTPResponse {
        var space: String?
        do throws(RelayRefusal) {
            let access = try authorize(request.headers)
            space = access.space
            return try await body(access)
        } catch {
            return refusalResponse(error, space: space)
        }
    }

    /// The screen of the push route (``HTTPRoute/screen``): a request without a token that
    /// verifies is refused (401) once its headers arrived, and a read-only token (403), so
    /// nobody can make the relay buffer bodies it would refuse. The handler verifies the token
    /// again, with the body.
    func refusalBeforePushBody(_ headers: HTTPHeaders) -> HTTPResponse? {
        do throws(RelayRefusal) {
            let access = try authorize(headers)
            if access.readOnly { throw RelayRefusal.readOnlyPush(space: access.space) }
            return nil
        } catch {
            return refusalResponse(error, space: nil)
        }
    }

    /// A refusal's response, counted in the metrics, with its log fields.
    private func refusalResponse(_ error: RelayRefusal, space: String?) -> HTTPResponse {
        if let reason = error.reason { metrics.recordRefusal(reason) }
        var response = error.response
        var fields: [(key: String, value: String)] = []
        if let space = error.space ?? space { fields.append(("space", space)) }
        if let reason = error.reason { fields.append(("reason", reason)) }
        response.logFields = fields
        return response
    }
}
