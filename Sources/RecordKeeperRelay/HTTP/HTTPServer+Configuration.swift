import Foundation

extension HTTPServer {
    /// How an ``HTTPServer`` listens and what it tolerates.
    ///
    /// ```swift
    /// var configuration = HTTPServer.Configuration(host: "0.0.0.0", port: 8443)
    /// configuration.maxBodyBytes = 16 << 20
    /// configuration.tls = try .init(certificateFile: "relay.crt", privateKeyFile: "relay.key")
    /// ```
    public struct Configuration: Sendable {
        /// The address to listen on: an IPv4 or IPv6 literal (`127.0.0.1`, `0.0.0.0`, `::1`,
        /// `::`), or `localhost` for 127.0.0.1.
        public var host: String
        /// The port; 0 picks a free one (``HTTPServer/port`` tells which).
        public var port: UInt16
        /// The largest request body accepted; larger ones are answered 413, whether the
        /// `Content-Length` announces it or a chunked body grows past it.
        public var maxBodyBytes: Int = 8 << 20
        /// How long a client may take from connecting (or from the end of its previous
        /// request on a kept-alive connection, after ``idleTimeout``) to the end of a request's
        /// headers. A client that sends its headers byte by byte is disconnected after it,
        /// however steadily it sends.
        public var headerTimeout: Duration = .seconds(10)
        /// How long a client may take to send a request's body, from the end of its headers.
        public var bodyTimeout: Duration = .seconds(120)
        /// How long a client may take to receive a response, from when it is queued, plus one
        /// second per 64 KiB of its body. libmicrohttpd's own timeout counts from the last byte
        /// sent, so a client that reads a large answer a little at a time would otherwise hold
        /// the connection (and the answer's copy) for ever.
        public var sendTimeout: Duration = .seconds(120)
        /// A connection on which nothing arrives for this long is closed
        /// (`MHD_OPTION_CONNECTION_TIMEOUT`, whole seconds, at least 1). A request being handled
        /// is never timed out by it.
        public var idleTimeout: Duration = .seconds(30)
        /// The most connections open at once (`MHD_OPTION_CONNECTION_LIMIT`). At the limit
        /// libmicrohttpd stops accepting: further connections wait in the kernel's listen queue
        /// until one closes (and are refused by the kernel when that queue is full). Each
        /// connection needs a file descriptor: the process's limit (`ulimit -n`) must be higher.
        public var connectionLimit: Int = 4096
        /// The number of polling threads (at least 1). Each runs its own epoll loop (poll on
        /// macOS) over the connections it accepted. Handlers never run on them.
        public var pollingThreads: Int = 1
        /// TLS, when the server itself terminates it; `nil` serves plain HTTP.
        public var tls: TLS?
        /// Where the one line per request (and the server's own messages) go; standard error
        /// by default.
        public var log: @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }

        /// Creates a configuration with the defaults above.
        public init(host: String = "127.0.0.1", port: UInt16 = 0) {
            self.host = host
            self.port = port
        }
    }

    /// A certificate chain and its private key, both PEM, for TLS through libmicrohttpd (GnuTLS).
    public struct TLS: Sendable {
        /// The certificate, then any intermediates, PEM.
        public var certificatePEM: String
        /// The certificate's private key, PEM, unencrypted.
        public var privateKeyPEM: String

        /// Creates TLS settings from PEM text.
        public init(certificatePEM: String, privateKeyPEM: String) {
            self.certificatePEM = certificatePEM
            self.privateKeyPEM = privateKeyPEM
        }

        /// Reads the certificate and key from PEM files.
        ///
        /// - Throws: ``HTTPServerError`` when a file cannot be read.
        public init(certificateFile: String, privateKeyFile: String) throws(HTTPServerError) {
            func read(_ path: String, _ what: String) throws(HTTPServerError) -> String {
                do {
                    return try String(contentsOfFile: path, encoding: .utf8)
                } catch {
                    throw HTTPServerError(.configuration, "cannot read the TLS \(what) \(path): \(error.localizedDescription)")
                }
            }
            certificatePEM = try read(certificateFile, "certificate")
            privateKeyPEM = try read(privateKeyFile, "key")
        }
    }
}
