import Foundation
import RecordKeeperCoding

/// The sync relay's protocol, version 1 (the `/v1/` in every path; docs/RELAY.md "Protocol"
/// describes it): its paths, query names and JSON bodies, shared by the relay
/// (`RecordKeeperRelay`) and the device's `HTTPSyncServer`. Operations, outcomes and pages
/// travel in the sync types' own `Codable` form (the one PostgreSQL stores outcomes in),
/// written and read with `RecordJSONEncoder` and `RecordJSONDecoder`.
public enum RelayWire {
    /// The protocol version the relay speaks (the `/v1/` of its paths).
    public static let version = 1

    /// `POST`: a ``PushRequest``, answered with a ``PushResponse``.
    public static let pushPath = "/v1/push"
    /// `GET` with the query of ``pullQuery(after:limit:space:)``, answered with a ``SyncPage``.
    public static let pullPath = "/v1/pull"
    /// `GET`, no token needed: ``Health``.
    public static let healthPath = "/v1/health"

    /// The query of a pull from `cursor`, as (name, value) pairs: `after` (the counter),
    /// `afterCollection` and `afterKey` (when the page before was cut inside a commit),
    /// `limit`, and `space` (optional; the relay refuses one that is not the token's).
    public static func pullQuery(after cursor: SyncCursor, limit: Int, space: String?) -> [(name: String, value: String)] {
        var items = cursorQuery(cursor)
        items.append(("limit", String(limit)))
        if let space { items.append(("space", space)) }
        return items
    }

    /// The query of a pull of `collections` from `cursor`: ``pullQuery(after:limit:space:)``
    /// and, unless `collections` is `nil` (every collection), `collections`, a JSON array of
    /// the names in byte order (``collectionsValue(_:)``).
    ///
    /// - Throws: ``SyncError/Code/invalidRequest`` when the names cannot be encoded.
    public static func pullQuery(
        after cursor: SyncCursor, limit: Int, space: String?, collections: Set<String>?
    ) throws(SyncError) -> [(name: String, value: String)] {
        var items = pullQuery(after: cursor, limit: limit, space: space)
        if let collections { items.append(("collections", try collectionsValue(collections))) }
        return items
    }

    /// The `collections` value of a pull query: the names as a JSON array of strings, in byte
    /// order (`["notes","tags"]`), which any name can travel in.
    ///
    /// - Throws: ``SyncError/Code/invalidRequest`` when the names cannot be encoded.
    public static func collectionsValue(_ collections: Set<String>) throws(SyncError) -> String {
        let names = collections.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        do {
            return String(decoding: try RecordJSONEncoder().encode(names), as: UTF8.self)
        } catch {
            throw SyncError(.invalidRequest, "the pull's collections could not be encoded: \(error)", underlying: error)
        }
    }

    /// The collections a `collections` query value names.
    ///
    /// - Throws: ``SyncError/Code/invalidRequest`` when it is not a JSON array of strings, or a
    ///   name is empty or contains a NUL character, or it names more than
    ///   ``SyncPullFilter/maximumCollections``.
    public static func collections(queryValue value: String) throws(SyncError) -> Set<String> {
        let names: [String]
        do {
            names = try RecordJSONDecoder().decode([String].self, from: Data(value.utf8))
        } catch {
            throw SyncError(
                .invalidRequest, "collections must be a JSON array of collection names, like [\"notes\"]", underlying: error)
        }
        let collections = Set(names)
        try SyncRequestValidation.validateFilter(collections)
        return collections
    }

    /// The header of a pull answer whose page is not the last (`hasMore`): the page's
    /// `cursor` in the pull query's form (`after=…[&afterCollection=…&afterKey=…]`,
    /// percent-encoded), so that a client may ask for the next page before it has read this
    /// one (`HTTPSyncServer` does). The page's own `cursor` is what counts; a client that
    /// ignores the header loses nothing (it was added within protocol version 1).
    public static let nextCursorHeader = "RecordKeeper-Next-Cursor"

    /// The header of a pull answer holding several pages (a pull that asked `pages=N`, N > 1):
    /// their number. The body is then the pages' JSON objects, each on a line of its own
    /// (JSON text holds no raw line break), in order, each page starting at the cursor the one
    /// before it ended at; ``nextCursorHeader`` names the last one's cursor. A relay that
    /// answers one page (or predates `pages`) sends no such header and a plain page body.
    public static let pagesHeader = "RecordKeeper-Pages"

    /// The most pages one pull answer holds (a `pages=` above it is lowered to it).
    public static let maximumPagesPerAnswer = 16

    /// The value of ``nextCursorHeader`` for `cursor`.
    public static func nextCursorValue(_ cursor: SyncCursor) -> String {
        encodedQuery(cursorQuery(cursor))
    }

    /// The cursor a ``nextCursorHeader`` value names, or `nil` when it names none.
    package static func cursor(nextCursorValue value: String) -> SyncCursor? {
        var fields: [String: String] = [:]
        for pair in value.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = parts[0].removingPercentEncoding,
                let text = parts[1].removingPercentEncoding, fields.updateValue(text, forKey: name) == nil
            else { return nil }
        }
        guard let counterText = fields.removeValue(forKey: "after"), let counter = Int64(counterText), counter >= 0
        else { return nil }
        switch (fields.removeValue(forKey: "afterCollection"), fields.removeValue(forKey: "afterKey")) {
        case (nil, nil) where fields.isEmpty:
            return SyncCursor(counter: counter)
        case (let collection?, let key?) where fields.isEmpty:
            return SyncCursor(counter: counter, position: .init(collection: collection, key: key))
        default:
            return nil
        }
    }

    /// `(name, value)` pairs as a query string, each percent-encoded except for RFC 3986's
    /// unreserved characters (so `+` and `&` in a key travel as themselves).
    public static func encodedQuery(_ items: [(name: String, value: String)]) -> String {
        items.map { "\(percentEncoded($0.name))=\(percentEncoded($0.value))" }.joined(separator: "&")
    }

    private static func cursorQuery(_ cursor: SyncCursor) -> [(name: String, value: String)] {
        var items: [(name: String, value: String)] = [("after", String(cursor.counter))]
        if let position = cursor.position {
            items.append(("afterCollection", position.collection))
            items.append(("afterKey", position.key))
        }
        return items
    }

    private static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// `POST /v1/push` body: `{"operations":[…]}`, optionally with `"space"`, which must then be
    /// the token's.
    public struct PushRequest: Codable, Sendable {
        public var space: String?
        public var operations: [SyncOperation]

        /// Creates a push request.
        public init(space: String? = nil, operations: [SyncOperation]) {
            self.space = space
            self.operations = operations
        }
    }

    /// `POST /v1/push` answer: one outcome per operation, in order.
    public struct PushResponse: Codable, Sendable {
        public var outcomes: [SyncOutcome]

        /// Creates a push answer.
        public init(outcomes: [SyncOutcome]) {
            self.outcomes = outcomes
        }
    }

    /// `GET /v1/health` answer.
    public struct Health: Codable, Sendable, Equatable {
        /// `ok`, or `unavailable` (with status 503).
        public var status: String
        /// Why it is unavailable.
        public var reason: String?
        /// ``RelayWire/version``.
        public var protocolVersion: Int
        /// The largest request body accepted: a device splits larger pushes.
        public var maxBodyBytes: Int
        /// The most changes one pull page holds (a larger `limit` is lowered to it).
        public var maxPullLimit: Int
        /// `true` when the relay carries the item versions of changes (``SyncChange/itemVersion``,
        /// ``SyncPulledChange/itemVersion``; added within protocol version 1). A relay that does
        /// not say so (an older one, `nil`) would drop them: `HTTPSyncServer` refuses to push
        /// a change with an item version through it.
        public var itemVersions: Bool?
        /// The longest the relay holds a live pull, in seconds (`wait=` in a pull's query,
        /// lowered to it; added within protocol version 1). A relay that does not say it
        /// (`nil`) ignores `wait` and answers every pull at once, which a live pull's caller
        /// sees as an empty page "nothing yet".
        public var maxPullWait: Int?

        /// Creates a health answer.
        public init(
            status: String, reason: String? = nil, protocolVersion: Int, maxBodyBytes: Int, maxPullLimit: Int,
            itemVersions: Bool? = nil, maxPullWait: Int? = nil
        ) {
            self.maxPullWait = maxPullWait
            self.status = status
            self.reason = reason
            self.protocolVersion = protocolVersion
            self.maxBodyBytes = maxBodyBytes
            self.maxPullLimit = maxPullLimit
            self.itemVersions = itemVersions
        }
    }

    /// The body of every error answer: `{"error":{"code":"forbidden","message":"…"}}`.
    public struct ErrorBody: Codable, Sendable {
        /// The error.
        public struct Detail: Codable, Sendable {
            /// A stable name for programs (`badRequest`, `unauthorized`, `forbidden`,
            /// `notFound`, `methodNotAllowed`, `behindHorizon`, `payloadTooLarge`, `unavailable`,
            /// `serverFailure`).
            public var code: String
            /// What went wrong, for people. Never contains a token or a payload.
            public var message: String
            /// The body limit, in a 413.
            public var maxBodyBytes: Int?

            /// Creates an error detail.
            public init(code: String, message: String, maxBodyBytes: Int? = nil) {
                self.code = code
                self.message = message
                self.maxBodyBytes = maxBodyBytes
            }
        }

        /// The error.
        public var error: Detail

        /// Creates an error body.
        public init(error: Detail) {
            self.error = error
        }
    }
}
