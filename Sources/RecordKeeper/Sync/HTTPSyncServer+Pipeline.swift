import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPSyncServer {
    /// One page, fetched for a pull (`id` from ``PullPipeline/claim(_:fetch:)``). When the
    /// relay's answer names the next page's cursor (``/RecordKeeperSync/RelayWire/nextCursorHeader``), the next
    /// page is asked for at once, before this one is decoded; the pipeline hands it only to a
    /// pull asking exactly for it.
    func fetchPage(_ request: PullPipeline.Request, id: UInt64) async throws -> SyncPage {
        var items = try RelayWire.pullQuery(
            after: request.cursor, limit: request.limit, space: request.space, collections: request.collections)
        if request.wait > 0 {
            items.append(("wait", String(request.wait)))
        } else if request.limit > 1 {
            // A device catching up gets several pages per answer (a relay without `pages`
            // answers one): fewer requests, each page what a pull of its cursor answers (the
            // last may end sooner, where the answer's payload budget ran out). A
            // pull of one change is a probe (the tool's check of its token): one page, not
            // sixteen changes that may each be megabytes.
            items.append(("pages", String(RelayWire.maximumPagesPerAnswer)))
        }
        let (data, response) = try await exchange(
            "pull", path: RelayWire.pullPath, query: RelayWire.encodedQuery(items), token: request.token,
            heldFor: request.wait)
        var next: PullPipeline.Request?
        if response.statusCode == 200, let value = response.value(forHTTPHeaderField: RelayWire.nextCursorHeader),
            let cursor = RelayWire.cursor(nextCursorValue: value), cursor > request.cursor
        {
            let following = PullPipeline.Request(
                space: request.space, cursor: cursor, limit: request.limit, collections: request.collections,
                token: request.token, wait: request.wait)
            next = following
            await pipeline.answered(id, next: following, fetch: pageFetcher)
        }
        let pages: [SyncPage]
        do {
            pages = try decode("pull", response, data) { data in try Self.decodePages(data, response) }
        } catch let tooLarge as BodyTooLarge {
            throw SyncError(.serverFailure, tooLarge.message)
        } catch let error as SyncError where error.code == .serverFailure && response.statusCode == 200 {
            // A 200 that is not a pull answer: a server that is no relay (a web server that
            // answers every path), a captive portal, or a relay that failed. Only the first is a
            // setting to correct, and a captive portal's page looks the same: retried, but said.
            throw SyncError(
                .serverFailure, error.message + "; is \(url.shownWithoutPassword) the URL of a sync relay?",
                underlying: error.underlying)
        }
        // Each page starts where the one before it ended, and only the last may say there is
        // no more: otherwise nothing of the answer is used.
        for (earlier, later) in zip(pages, pages.dropFirst()) where !earlier.hasMore || !(later.cursor > earlier.cursor) {
            throw SyncError(
                .serverFailure,
                "the relay at \(url.shownWithoutPassword) answered a pull with pages that do not follow each other")
        }
        guard let first = pages.first, let last = pages.last else {
            throw SyncError(.serverFailure, "the relay at \(url.shownWithoutPassword) answered a pull with no page")
        }
        if pages.count > 1 {
            var cursor = first.cursor
            var following: [(PullPipeline.Request, SyncPage)] = []
            for page in pages.dropFirst() {
                following.append((request.at(cursor), page))
                cursor = page.cursor
            }
            await pipeline.keep(following)
        }
        // The pages themselves are what counts: a header that does not match the last fetched in vain.
        if let next, !(last.hasMore && last.cursor == next.cursor) { await pipeline.drop(next) }
        return first
    }

    /// The pages of a pull answer: one page, or (``/RecordKeeperSync/RelayWire/pagesHeader``) one per line.
    static func decodePages(_ data: Data, _ response: HTTPURLResponse) throws -> [SyncPage] {
        guard let header = response.value(forHTTPHeaderField: RelayWire.pagesHeader) else {
            return [try SyncWireJSON.decodePage(data)]
        }
        guard let count = Int(header), (1...RelayWire.maximumPagesPerAnswer).contains(count) else {
            throw SyncError(.serverFailure, "\(RelayWire.pagesHeader): \(header) is not a number of pages")
        }
        var pages: [SyncPage] = []
        var start = 0
        for end in SyncWireJSON.lineEnds(data) {
            // A slice of the answer, not a copy: the reader copies it once.
            if end > start { pages.append(try SyncWireJSON.decodePage(data[data.startIndex + start..<data.startIndex + end])) }
            start = end + 1
        }
        guard pages.count == count, start == data.count else {
            throw SyncError(.serverFailure, "\(RelayWire.pagesHeader) says \(count) pages, the body holds \(pages.count)")
        }
        return pages
    }

    /// Starts a fetch ahead, for the pipeline.
    var pageFetcher: PullPipeline.Fetch {
        { [self] request, id in Task { try await fetchPage(request, id: id) } }
    }
}

/// The page asked for ahead of the pull that will want it (docs/RELAY.md "Pipelined pulls"),
/// and the later pages of an answer that held several.
///
/// At most one fetch runs ahead. It is handed only to a pull asking exactly its request
/// (space, cursor, limit, collections and token), so a pull gets what it would get asking then; a pull
/// asking anything else cancels it and fetches its own. Its error is thrown to the pull that
/// claims it; a fetch nobody claims is cancelled by the next pull or dropped with the server.
/// A fetch ahead starts the one after it only once a pull has claimed it: pulls run at most
/// one page ahead of the caller.
actor PullPipeline {
    /// What a pull asks.
    struct Request: Equatable, Sendable {
        let space: String
        let cursor: SyncCursor
        let limit: Int
        let collections: Set<String>?
        let token: String
        /// A live pull's wait, whole seconds (0: answer at once).
        var wait = 0

        /// The same request from `cursor`.
        func at(_ cursor: SyncCursor) -> Request {
            Request(space: space, cursor: cursor, limit: limit, collections: collections, token: token, wait: wait)
        }
    }

    /// Starts fetching `request` as fetch `id`.
    typealias Fetch = @Sendable (_ request: Request, _ id: UInt64) -> Task<SyncPage, any Error>

    /// What a pull does: take a page kept from an earlier answer, wait for the fetch ahead,
    /// or fetch with this id.
    enum Claim {
        case kept(SyncPage)
        case ahead(Task<SyncPage, any Error>)
        case fetch(UInt64)
    }

    private struct Ahead {
        let id: UInt64
        let request: Request
        let task: Task<SyncPage, any Error>
        /// The request after it, when its answer came before a pull claimed it.
        var next: Request?
    }

    private var ahead: Ahead?
    /// Pages that came in one answer after the page asked for, each with the request it
    /// answers (its cursor the one before it ended at), oldest first.
    private var kept: [(request: Request, page: SyncPage)] = []
    /// The fetch a pull waits for: its answer may start the next fetch ahead.
    private var claimed: UInt64?
    private var lastID: UInt64 = 0

    /// For a pull of `request`: the fetch ahead when it fetches exactly that, or else a new
    /// fetch's id (and a fetch ahead of anything else is cancelled).
    func claim(_ request: Request, fetch: Fetch) -> Claim {
        if let index = kept.firstIndex(where: { $0.request == request }) {
            let page = kept[index].page
            kept.removeSubrange(...index)
            return .kept(page)
        }
        if let current = ahead, current.request == request {
            ahead = nil
            claimed = current.id
            if let next = current.next { start(next, fetch: fetch) }
            return .ahead(current.task)
        }
        // A pull of anything else: the caller moved on.
        kept = []
        cancel()
        lastID += 1
        claimed = lastID
        return .fetch(lastID)
    }

    /// Keeps the later pages of an answer for the pulls that will ask for them.
    func keep(_ pages: [(Request, SyncPage)]) {
        kept += pages.map { (request: $0.0, page: $0.1) }
    }

    /// Fetch `id` was answered, and the relay named the next page: fetch it ahead when a pull
    /// waits for `id`, or once one claims it.
    func answered(_ id: UInt64, next: Request, fetch: Fetch) {
        if ahead?.id == id {
            ahead?.next = next
        } else if claimed == id {
            start(next, fetch: fetch)
        }
    }

    /// Cancels the fetch ahead of `request`, which its page did not name after all.
    func drop(_ request: Request) {
        if ahead?.request == request { cancel() }
    }

    /// Forgets what was read ahead (kept pages and the fetch ahead): after a push of this
    /// client, they may hold a record at a version older than the one its answer gave the
    /// device, which would read as a server gone back.
    func discard() {
        kept = []
        cancel()
    }

    /// Cancels the fetch ahead, if any.
    func cancel() {
        ahead?.task.cancel()
        ahead = nil
    }

    private func start(_ request: Request, fetch: Fetch) {
        cancel()
        lastID += 1
        ahead = Ahead(id: lastID, request: request, task: fetch(request, lastID))
    }

    deinit {
        ahead?.task.cancel()
    }
}
