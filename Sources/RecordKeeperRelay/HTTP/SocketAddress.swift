import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address and port to listen on, parsed from a literal.
struct SocketAddress: Sendable, CustomStringConvertible {
    private enum Storage: Sendable {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }

    private let storage: Storage
    let host: String
    let port: UInt16

    /// Parses `host` (`127.0.0.1`, `::1`, `0.0.0.0`, `::`, or `localhost`).
    ///
    /// - Throws: ``HTTPServerError`` of kind ``HTTPServerError/Kind/configuration`` for anything
    ///   else (host names are not resolved: a server listens on an address).
    init(host: String, port: UInt16) throws(HTTPServerError) {
        self.port = port
        let literal = host == "localhost" ? "127.0.0.1" : host
        let bare = literal.hasPrefix("[") && literal.hasSuffix("]") ? String(literal.dropFirst().dropLast()) : literal
        self.host = bare
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            #if canImport(Darwin)
                v4.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            storage = .v4(v4)
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            #if canImport(Darwin)
                v6.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
            #endif
            storage = .v6(v6)
            return
        }
        throw HTTPServerError(.configuration, "cannot listen on '\(host)': give an IPv4 or IPv6 address, or localhost")
    }

    /// The same address with another port.
    func withPort(_ newPort: UInt16) -> SocketAddress {
        switch storage {
        case .v4(var address):
            address.sin_port = newPort.bigEndian
            return SocketAddress(storage: .v4(address), host: host, port: newPort)
        case .v6(var address):
            address.sin6_port = newPort.bigEndian
            return SocketAddress(storage: .v6(address), host: host, port: newPort)
        }
    }

    private init(storage: Storage, host: String, port: UInt16) {
        self.storage = storage
        self.host = host
        self.port = port
    }

    var isIPv6: Bool {
        if case .v6 = storage { return true }
        return false
    }

    /// `0.0.0.0` or `::`.
    var isAnyAddress: Bool {
        switch storage {
        case .v4(let address): return address.sin_addr.s_addr == 0
        case .v6(let address):
            return withUnsafeBytes(of: address.sin6_addr) { $0.allSatisfy { $0 == 0 } }
        }
    }

    func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        switch storage {
        case .v4(var address):
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        case .v6(var address):
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
    }

    var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
