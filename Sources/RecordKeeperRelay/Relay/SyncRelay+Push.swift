import Foundation
import RecordKeeperSync

extension SyncRelay {
    /// `POST /v1/push`.
    func push(_ request: HTTPRequest) async -> HTTPResponse {
        await authorized(request) { access throws(RelayRefusal) in
            let outcomes = try await push(request, access: access)
            var response = RelayResponses.json(200, RelayWire.PushResponse(outcomes: outcomes))
            response.logFields = [("space", access.space), ("operations", String(outcomes.count))]
            return response
        }
    }

    private func push(_ request: HTTPRequest, access: RelayAccess) async throws(RelayRefusal) -> [SyncOutcome] {
        if access.readOnly { throw RelayRefusal.readOnlyPush(space: access.space) }
        try requireSpace(request.query["space"], of: access)
        let body: RelayWire.PushRequest
        do {
            body = try SyncWireJSON.decodePush(request.body)
        } catch {
            throw RelayResponses.badRequest("the body is not a push request: \(RelayResponses.describe(error))")
        }
        try requireSpace(body.space, of: access)
        for operation in body.operations {
            for change in operation.changes where !access.allows(change.collection) {
                throw RelayResponses.forbidden(
                    "the token does not grant collection \(JWTError.shown(change.collection)); nothing was applied",
                    reason: "other_collection", space: access.space)
            }
        }
        if body.operations.isEmpty { return [] }
        let outcomes: [SyncOutcome]
        // Answers read ahead for the space before the push are stale for what it writes,
        // also when its answer is lost (it may have committed).
        defer { pullAhead.forget(space: access.space) }
        do {
            outcomes = try await server.push(space: access.space, operations: body.operations)
        } catch {
            throw RelayResponses.failure(error, operation: "push", space: access.space, log: configuration.log)
        }
        metrics.recordOutcomes(outcomes.map { outcome in
            if outcome.isRedelivery { return .redelivered }
            switch outcome.result {
            case .applied: return .applied
            case .conflict: return .conflict
            case .outOfOrder: return .outOfOrder
            case .compacted: return .redelivered  // always a redelivery
            }
        })
        return outcomes
    }
}
