import Foundation
import RecordKeeperSync

extension SyncRelay {
    /// `GET /v1/pull?after=COUNTER[&afterCollection=C&afterKey=K][&limit=N][&space=S][&collections=["C",…]][&wait=S][&pages=N]`.
    func pull(_ request: HTTPRequest) async -> HTTPResponse {
        await authorized(request) { access throws(RelayRefusal) in
            let count = min(try Self.pages(request.query), max(1, configuration.maxPagesPerAnswer))
            try requireSpace(request.query["space"], of: access)
            let key = RelayPullAhead.Key(
                space: access.space, cursor: try Self.cursor(request.query), limit: try Self.limit(request.query, configuration),
                collections: try Self.collections(request.query, access: access), pages: count)
            let wait = try Self.wait(request.query, maximum: configuration.maxPullWait)
            // A device catching up: its answer may have been read ahead (RelayPullAhead).
            let catchingUp = wait == .zero && count > 1
            var pages: [SyncPage]
            var readAhead = false
            if catchingUp, let ahead = pullAhead.claim(key), let read = await ahead.value {
                pages = read
                readAhead = true
            } else {
                pages = try await self.pages(key, wait: wait)
            }
            if catchingUp, let last = pages.last, last.hasMore {
                // Started before this answer is encoded and sent: the database works meanwhile.
                let next = RelayPullAhead.Key(
                    space: key.space, cursor: last.cursor, limit: key.limit, collections: key.collections, pages: count)
                pullAhead.start(next) { [self] in await pagesAhead(next) }
            }
            var response = Self.response(pages, space: key.space)
            if readAhead { response.logFields.append(("readAhead", "yes")) }
            return response
        }
    }

    /// The pages of a pull's answer: one, or up to `pages=N` (not for a live pull) while each
    /// says there is more and the answer stays within ``SyncRelay/Configuration/maxPullLimit``
    /// changes and about ``/RecordKeeperSync/SyncPage/payloadBudget`` payload bytes in all
    /// (page by page, each page has its own budget and no page is added once the answer holds
    /// one: up to about twice the budget): fewer requests for a device catching up, each page what a pull of its
    /// cursor would have answered.
    private func pages(_ key: RelayPullAhead.Key, wait: Duration) async throws(RelayRefusal) -> [SyncPage] {
        if wait == .zero {
            do {
                if let read = try await pagesInOneRead(key) { return read }
            } catch {
                throw RelayResponses.failure(error, operation: "pull", space: key.space, log: configuration.log)
            }
        }
        let first = try await firstPage(
            space: key.space, after: key.cursor, limit: key.limit, collections: key.collections, wait: wait)
        return wait == .zero ? await pages(from: first, key) : [first]
    }

    /// The pages of `key` read ahead, or nil when its first page failed: the device's own pull
    /// of that cursor then pulls again, and meets and reports the failure as any pull does.
    private func pagesAhead(_ key: RelayPullAhead.Key) async -> [SyncPage]? {
        let first: SyncPage
        do {
            if let read = try await pagesInOneRead(key) { return read }
            first = try await pull(space: key.space, after: key.cursor, limit: key.limit, collections: key.collections, wait: .zero)
        } catch {
            // Not this request's failure to answer: the device's own pull of this cursor pulls
            // again and reports what fails then. Logged, so that nothing fails unseen.
            configuration.log(
                "recordkeeper-relay: pull: reading ahead from \(key.cursor) for space \(key.space) failed, "
                    + "the device's own pull will pull again: \(error)")
            return nil
        }
        metrics.recordPull(changes: first.changes.count)
        return await pages(from: first, key)
    }

    /// The pages of an answer of `key` in one read, when the server reads several pages at once
    /// (``/RecordKeeperSync/SyncPagesPulling``: one snapshot and one statement of PostgreSQL
    /// instead of one per page) and the answer has more than one page; nil otherwise (and for a
    /// token whose collections this relay filters itself), when the pages are pulled one by one.
    /// Up to `key.pages` while the answer stays within ``SyncRelay/Configuration/maxPullLimit``
    /// changes and one payload budget (the last page may end sooner than a pull of its cursor).
    private func pagesInOneRead(_ key: RelayPullAhead.Key) async throws -> [SyncPage]? {
        let count = min(key.pages, max(1, configuration.maxPullLimit / key.limit))
        guard count > 1, let pager = server as? any SyncPagesPulling,
            (key.collections?.count ?? 0) <= SyncPullFilter.maximumCollections
        else { return nil }
        let pages = try await pager.pullPages(
            space: key.space, after: key.cursor, limit: key.limit, collections: key.collections, pages: count)
        for page in pages { metrics.recordPull(changes: page.changes.count) }
        return pages
    }

    /// `first` and the pages after it, up to `key.pages` in all.
    private func pages(from first: SyncPage, _ key: RelayPullAhead.Key) async -> [SyncPage] {
        var pages = [first]
        var changes = first.changes.count
        // An answer pulled page by page stops adding pages once it holds its payload budget,
        // as one read of several pages does.
        var bytes = first.changes.payloadBytes
        while let last = pages.last, last.hasMore, pages.count < key.pages, changes + key.limit <= configuration.maxPullLimit,
            bytes < configuration.pullPayloadBudget
        {
            let next: SyncPage
            do {
                next = try await pull(
                    space: key.space, after: last.cursor, limit: key.limit, collections: key.collections, wait: .zero)
            } catch {
                // The pages pulled so far are an answer of their own (each what a pull of its
                // cursor answers); the client's pull of the next cursor meets the failure.
                configuration.log(
                    "recordkeeper-relay: pull: page \(pages.count + 1) of an answer of up to \(key.pages) for space "
                        + "\(key.space) failed, the \(pages.count) before it answered: \(error)")
                break
            }
            metrics.recordPull(changes: next.changes.count)
            changes += next.changes.count
            bytes += next.changes.payloadBytes
            pages.append(next)
        }
        return pages
    }

    /// The response of `pages` (never empty), with the next cursor when there is more.
    private static func response(_ pages: [SyncPage], space: String) -> HTTPResponse {
        let last = pages[pages.count - 1]
        var response = pages.count == 1 ? RelayResponses.page(last) : RelayResponses.pages(pages)
        if last.hasMore, response.status == 200 {
            // The next page's cursor, readable before the body: the client may ask for it at once.
            response.headers.set(RelayWire.nextCursorHeader, RelayWire.nextCursorValue(last.cursor))
        }
        let changes = pages.reduce(0) { $0 + $1.changes.count }
        response.logFields = [("space", space), ("changes", String(changes))]
        if pages.count > 1 { response.logFields.append(("pages", String(pages.count))) }
        return response
    }

    /// `pages`: 1 unless given; a whole number from 1, lowered to
    /// ``RecordKeeper/RelayWire/maximumPagesPerAnswer``.
    static func pages(_ query: [String: String]) throws(RelayRefusal) -> Int {
        guard let text = query["pages"] else { return 1 }
        guard let value = Int(text), value >= 1 else {
            throw RelayResponses.badRequest("pages must be a whole number, 1 or more")
        }
        return min(value, RelayWire.maximumPagesPerAnswer)
    }

    /// `limit`: the configured default unless given, within the relay's maximum.
    static func limit(_ query: [String: String], _ configuration: Configuration) throws(RelayRefusal) -> Int {
        var limit = configuration.defaultPullLimit
        if let text = query["limit"] {
            guard let value = Int(text), (1...SyncPage.maximumLimit).contains(value) else {
                throw RelayResponses.badRequest("limit must be a whole number from 1 to \(SyncPage.maximumLimit)")
            }
            limit = value
        }
        return min(limit, configuration.maxPullLimit)
    }

    /// The page the request asks for: a live pull held when it waits; a failure is the answer.
    private func firstPage(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws(RelayRefusal) -> SyncPage {
        let page: SyncPage
        do {
            if wait > .zero {
                page = try await held(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
            } else {
                page = try await pull(space: space, after: cursor, limit: limit, collections: collections, wait: .zero)
            }
        } catch {
            throw RelayResponses.failure(error, operation: "pull", space: space, log: configuration.log)
        }
        metrics.recordPull(changes: page.changes.count)
        return page
    }

    /// A live pull, held by the sync server until a change commits or `wait` passes; answered
    /// at once with the empty page of its deadline when the relay starts shutting down.
    private func held(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        let page = try await heldPulls.hold { [self] in
            try await pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
        }
        guard let page else {
            metrics.recordLivePull(.drained)
            return SyncPage(changes: [], cursor: cursor, hasMore: false)
        }
        metrics.recordLivePull(page.changes.isEmpty && !page.hasMore ? .timedOut : .woken)
        return page
    }

    private func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        if let collections, collections.count > SyncPullFilter.maximumCollections {
            // A token granting more collections than one pull may name: its pages are trimmed
            // here instead (a live pull may then answer early with an empty page).
            return try await SyncPullFilter.pull(after: cursor, collections: collections) { after in
                try await server.pull(space: space, after: after, limit: limit, collections: nil, wait: wait)
            }
        }
        return try await server.pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
    }

    /// The live pull's `wait`: whole seconds, 0 (the default: answer at once) or more; a wait
    /// above `maximum` is lowered to it.
    static func wait(_ query: [String: String], maximum: Duration) throws(RelayRefusal) -> Duration {
        guard let text = query["wait"] else { return .zero }
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw RelayResponses.badRequest("wait must be whole seconds: a whole number, 0 or more")
        }
        // All digits: a number too large for Int is above every maximum.
        guard let seconds = Int64(text) else { return maximum }
        return min(.seconds(seconds), maximum)
    }

    /// The collections a pull reads: those the query's `collections` names (all without it),
    /// within those the token grants. A request never widens the token's grant, and the
    /// grant narrows the request (a collection it does not grant is left out, as its changes
    /// are left out of a pull naming none); the server filters, so the cursor still passes
    /// the changes left out, and a page cut short ends at a change the token may see.
    static func collections(_ query: [String: String], access: RelayAccess) throws(RelayRefusal) -> Set<String>? {
        var requested: Set<String>?
        if let text = query["collections"] {
            do {
                requested = try RelayWire.collections(queryValue: text)
            } catch {
                throw RelayResponses.badRequest(error.message)
            }
        }
        switch (requested, access.collections) {
        case (nil, nil): return nil
        case (let requested?, nil): return requested
        case (nil, _?):
            // A pull of every collection (a device that syncs more than a pull can name):
            // answering with the granted ones only would move its cursor past the changes of
            // the others it syncs, which it would then never get, even with a token that grants
            // them. Refused, and nothing read.
            throw RelayResponses.forbidden(
                "the token grants only some collections, and the pull does not name the ones it syncs; "
                    + "a pull of the granted ones alone would move the cursor past the others' changes: nothing was read "
                    + "(name the collections, at most 100, or use a token that grants every collection of the space)",
                reason: "other_collection", space: access.space)
        case (let requested?, _?):
            // A device names the collections it syncs. Pulling only the granted ones would move
            // its cursor past the others' changes, which it would then never get, even with a
            // token that grants them: refused, as a push to them is.
            let refused = requested.filter { !access.allows(RelayAccess.normalized($0)) }.sorted()
            if !refused.isEmpty {
                throw RelayResponses.forbidden(
                    "the token does not grant collection(s) " + refused.map { JWTError.shown($0) }.joined(separator: ", ")
                        + "; a pull that left them out would move the cursor past their changes: nothing was read",
                    reason: "other_collection", space: access.space)
            }
            return requested
        }
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
