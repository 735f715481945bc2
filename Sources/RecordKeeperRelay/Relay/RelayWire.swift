public import RecordKeeper

/// The JSON bodies of the relay's protocol, version 1 (the `/v1/` in every path;
/// docs/RELAY.md "Protocol" describes them). Operations, outcomes and pages travel in the sync
/// types' own `Codable` form, the one PostgreSQL stores outcomes in.
public enum RelayWire {
    /// The protocol version the relay speaks (the `/v1/` of its paths).
    public static let version = 1

    /// `POST /v1/push` body: `{"operations":[…]}`, optionally with `"space"`, which must then be
    /// the token's.
    public struct PushRequest: Codable, Sendable {
        public var space: String?
        public var operations: [SyncOperation]

        public init(space: String? = nil, operations: [SyncOperation]) {
            self.space = space
            self.operations = operations
        }
    }

    /// `POST /v1/push` answer: one outcome per operation, in order.
    public struct PushResponse: Codable, Sendable {
        public var outcomes: [SyncOutcome]

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

        public init(status: String, reason: String? = nil, protocolVersion: Int, maxBodyBytes: Int, maxPullLimit: Int) {
            self.status = status
            self.reason = reason
            self.protocolVersion = protocolVersion
            self.maxBodyBytes = maxBodyBytes
            self.maxPullLimit = maxPullLimit
        }
    }
}
