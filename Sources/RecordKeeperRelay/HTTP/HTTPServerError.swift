/// Why an ``HTTPServer`` could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: String, Sendable {
        /// The configuration is invalid (a bad address, a limit below 1, an unreadable file).
        case configuration
        /// libmicrohttpd could not start: the address is in use, the TLS certificate or key is
        /// invalid, or TLS is not supported by this build of libmicrohttpd.
        case start
    }

    /// The kind of failure.
    public let kind: Kind
    /// What happened, with libmicrohttpd's own message when it gave one.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
