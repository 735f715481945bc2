import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP port on 127.0.0.1 where nothing listens, for certain: a socket of this process is
/// bound to it and never listens, so a connection is refused at once and no other program can
/// take the port meanwhile. (Assuming that nothing listens on a well-known port is not safe.)
///
/// `@unchecked Sendable`: `descriptor` and `port` are set in `init` and only read afterwards.
public final class ClosedPort: @unchecked Sendable {
    /// The port number.
    public let port: Int
    private let descriptor: Int32

    /// Binds a new socket to a free port.
    /// - Throws: a `POSIXError` when the socket cannot be made or bound.
    public init() throws {
        (descriptor, port) = try Self.bindLoopback()
    }

    /// A new TCP socket bound to a free port of 127.0.0.1, and that port; the caller owns the
    /// socket (it may `listen` on it).
    /// - Throws: a `POSIXError` when the socket cannot be made or bound.
    public static func bindLoopback() throws -> (descriptor: Int32, port: Int) {
        #if canImport(Glibc)
            let stream = Int32(SOCK_STREAM.rawValue)
        #else
            let stream = SOCK_STREAM
        #endif
        let descriptor = socket(AF_INET, stream, 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            close(descriptor)
            throw error
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    deinit { close(descriptor) }

    private static let sharedPort = Protected<ClosedPort?>(nil)

    /// One closed port for the whole test process (kept bound until it exits), for values
    /// that must stay the same, such as an unreachable server's connection string.
    public static func shared() throws -> ClosedPort {
        try sharedPort.withLock { port in
            if let port { return port }
            let made = try ClosedPort()
            port = made
            return made
        }
    }
}
