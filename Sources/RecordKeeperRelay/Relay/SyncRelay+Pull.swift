import Foundation
import RecordKeeper

extension SyncRelay {
    /// `GET /v1/pull?after=COUNTER[&afterCollection=C&afterKey=K][&limit=N][&space=S]`.
    func pull(_ request: HTTPRequest) async -> HTTPResponse {
        await authorized(request) { access throws(RelayRefusal) in
            let page = try await pull(request, access: access)
            var response = RelayResponses.page(page)
            if page.hasMore, response.status == 200 {
                // The next page's cursor, readable before the body: the client may ask for it at once.
                response.headers.set(RelayWire.nextCursorHeader, RelayWire.nextCursorValue(page.cursor))
            }
            response.logFields = [("space", access.space), ("changes", String(page.changes.count))]
            return response
        }
    }

    private func pull(_ request: HTTPRequest, access: RelayAccess) async throws(RelayRefusal) -> SyncPage {
        try requireSpace(request.query["space"], of: access)
        let cursor = try Self.cursor(request.query)
        var limit = configuration.defaultPullLimit
        if let text = request.query["limit"] {
            guard let value = Int(text), (1...SyncPage.maximumLimit).contains(value) else {
                throw RelayResponses.badRequest("limit must be a whole number from 1 to \(SyncPage.maximumLimit)")
            }
            limit = value
        }
        limit = min(limit, configuration.maxPullLimit)
        var page: SyncPage
        do {
            page = try await server.pull(space: access.space, after: cursor, limit: limit)
        } catch {
            throw RelayResponses.failure(error, operation: "pull", space: access.space, log: configuration.log)
        }
        if access.collections != nil {
            // The cursor still moves past the changes left out: the token may never see them.
            page.changes.removeAll { !access.allows($0.collection) }
        }
        metrics.recordPull(changes: page.changes.count)
        return page
    }

    /// The cursor of the query: `after` (a counter, 0 when absent), with `afterCollection` and
    /// `afterKey` when a page was cut short.
    static func cursor(_ query: [String: String]) throws(RelayRefusal) -> SyncCursor {
        var counter: Int64 = 0
        if let text = query["after"] {
            guard let value = Int64(text), value >= 0 else {
                throw RelayResponses.badRequest("after must be a counter: a whole number, 0 or more")
            }
            counter = value
        }
        switch (query["afterCollection"], query["afterKey"]) {
        case (nil, nil):
            return SyncCursor(counter: counter)
        case (let collection?, let key?):
            return SyncCursor(counter: counter, position: .init(collection: collection, key: key))
        default:
            throw RelayResponses.badRequest("afterCollection and afterKey go together")
        }
    }
}
