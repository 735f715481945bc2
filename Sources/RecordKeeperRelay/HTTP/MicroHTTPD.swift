internal import CMicroHTTPD
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Every libmicrohttpd call of the relay is in this file and MicroHTTPD+Callbacks.swift.

/// A running libmicrohttpd daemon.
///
/// `@unchecked Sendable`: the pointer is only used through libmicrohttpd calls that are safe
/// from any thread (`MHD_quiesce_daemon`, `MHD_stop_daemon`, daemon info), and
/// ``HTTPServerCore`` makes sure `stop()` runs once, after every suspended connection was
/// resumed.
struct MicroHTTPDDaemon: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The C strings of the TLS key and certificate, kept until the daemon stops.
    let retainedStrings: [UnsafeMutablePointer<CChar>]

    /// Whether this build of libmicrohttpd supports TLS (Debian's is built with GnuTLS).
    static var supportsTLS: Bool { MHD_is_feature_supported(MHD_FEATURE.FEATURE_TLS) == MHD_Result.YES }

    /// Starts a daemon whose callbacks reach `core`.
    ///
    /// The threading mode: libmicrohttpd's internal polling threads with epoll (poll on macOS),
    /// `configuration.pollingThreads` of them, and `MHD_ALLOW_SUSPEND_RESUME`, so a request whose
    /// handler runs is suspended and costs no thread (see ``HTTPServer``).
    static func start(
        configuration: HTTPServer.Configuration, address: SocketAddress, core: HTTPServerCore
    ) throws(HTTPServerError) -> MicroHTTPDDaemon {
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        #if os(Linux)
            flags |= MHD_USE_EPOLL.rawValue
        #else
            flags |= MHD_USE_POLL.rawValue
        #endif
        if address.isIPv6 { flags |= address.isAnyAddress ? MHD_USE_DUAL_STACK.rawValue : MHD_USE_IPv6.rawValue }
        var strings: [UnsafeMutablePointer<CChar>] = []
        if let tls = configuration.tls {
            guard supportsTLS else {
                throw HTTPServerError(.start, "this libmicrohttpd was built without TLS support")
            }
            flags |= MHD_USE_TLS.rawValue
            for text in [tls.privateKeyPEM, tls.certificatePEM] {
                guard let copy = strdup(text) else {
                    throw HTTPServerError(.start, "out of memory copying the TLS settings")
                }
                strings.append(copy)
            }
        }
        let context = Unmanaged.passUnretained(core).toOpaque()
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(
                option: MHD_OPTION.CONNECTION_TIMEOUT,
                value: max(1, Int(configuration.idleTimeout.components.seconds)), ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.CONNECTION_LIMIT, value: configuration.connectionLimit, ptr_value: nil),
            recordkeeper_mhd_notify_completed(MicroHTTPDCallbacks.requestCompleted, context),
            recordkeeper_mhd_notify_connection(MicroHTTPDCallbacks.connectionNotified, context),
            recordkeeper_mhd_uri_log(MicroHTTPDCallbacks.requestLineReceived, context),
            recordkeeper_mhd_external_logger(MicroHTTPDCallbacks.libraryMessage, context),
        ]
        if configuration.pollingThreads > 1 {
            options.append(
                MHD_OptionItem(option: MHD_OPTION.THREAD_POOL_SIZE, value: configuration.pollingThreads, ptr_value: nil))
        }
        if configuration.tls != nil {
            options.append(MHD_OptionItem(option: MHD_OPTION.HTTPS_MEM_KEY, value: 0, ptr_value: UnsafeMutableRawPointer(strings[0])))
            options.append(MHD_OptionItem(option: MHD_OPTION.HTTPS_MEM_CERT, value: 0, ptr_value: UnsafeMutableRawPointer(strings[1])))
        }
        let daemon = address.withSocketAddress { socketAddress -> OpaquePointer? in
            var all = options
            all.append(MHD_OptionItem(option: MHD_OPTION.SOCK_ADDR, value: 0, ptr_value: UnsafeMutableRawPointer(mutating: socketAddress)))
            all.append(MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil))
            return all.withUnsafeBufferPointer { items in
                recordkeeper_mhd_start_daemon(
                    flags, configuration.port, MicroHTTPDCallbacks.access, context, items.baseAddress)
            }
        }
        guard let daemon else {
            for string in strings { free(string) }
            let reason = core.takeLibraryMessages().last.map { ": \($0)" } ?? ""
            throw HTTPServerError(.start, "libmicrohttpd could not listen on \(address)\(reason)")
        }
        return MicroHTTPDDaemon(pointer: daemon, retainedStrings: strings)
    }

    /// The port listened on.
    var port: UInt16 { recordkeeper_mhd_bound_port(pointer) }

    /// Whether the daemon polls with epoll (as chosen on Linux).
    var usesEpoll: Bool { recordkeeper_mhd_daemon_flags(pointer) & MHD_USE_EPOLL.rawValue != 0 }

    /// Stops accepting connections; the listening socket stays open until ``stop(listeningSocket:)``.
    func quiesce() -> Int32 {
        Int32(MHD_quiesce_daemon(pointer))
    }

    /// Stops the polling threads and closes every connection. No connection may be suspended.
    func stop(listeningSocket: Int32) {
        MHD_stop_daemon(pointer)
        if listeningSocket >= 0 { close(listeningSocket) }
        for string in retainedStrings { free(string) }
    }
}

/// A connection, handed to the handler task so that it can resume the connection.
///
/// `@unchecked Sendable`: `MHD_resume_connection` is safe from any thread, and a suspended
/// connection is never freed by libmicrohttpd (it cannot time out or be closed), so the pointer
/// stays valid until this resumes it, once.
struct SuspendedConnection: @unchecked Sendable {
    let pointer: OpaquePointer

    func resume() {
        MHD_resume_connection(pointer)
    }
}

/// The libmicrohttpd calls made from inside its callbacks, on the connection's polling thread.
enum MicroHTTPDConnection {
    /// Queues `response`; false when libmicrohttpd refused it (the connection is then closed).
    static func queue(_ response: HTTPResponse, on connection: OpaquePointer, closing: Bool, log: (String) -> Void) -> Bool {
        let handle: OpaquePointer? = response.body.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            if bytes.isEmpty {
                return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
            }
            return MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let handle else {
            log("event=response_failed reason=\"libmicrohttpd could not create a response\"")
            return false
        }
        defer { MHD_destroy_response(handle) }
        for (name, value) in response.headers {
            // The server sets the body's length; a header with a line break would split.
            if name.caseInsensitiveCompare("Content-Length") == .orderedSame { continue }
            if MHD_add_response_header(handle, name, value) != MHD_Result.YES {
                log("event=response_header_refused name=\(HTTPRequestSummary.logValue(name))")
            }
        }
        if closing { _ = MHD_add_response_header(handle, "Connection", "close") }
        return MHD_queue_response(connection, UInt32(response.status), handle) == MHD_Result.YES
    }

    static func suspend(_ connection: OpaquePointer) -> SuspendedConnection {
        MHD_suspend_connection(connection)
        return SuspendedConnection(pointer: connection)
    }

    static func socket(of connection: OpaquePointer) -> Int32 {
        recordkeeper_mhd_connection_fd(connection)
    }

    /// The request's headers and query parameters, or why they cannot be read (a NUL).
    static func values(of connection: OpaquePointer) -> (headers: HTTPHeaders, query: [String: String], malformed: String?) {
        final class Collected {
            var headers: [(name: String, value: String)] = []
            var query: [String: String] = [:]
            var malformed: String?
        }
        let collected = Collected()
        let iterator: MHD_KeyValueIteratorN = { context, kind, key, keySize, value, valueSize in
            guard let context else { return MHD_Result.NO }
            let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
            func text(_ pointer: UnsafePointer<CChar>?, _ size: Int) -> String? {
                guard let pointer else { return nil }
                let bytes = UnsafeRawBufferPointer(start: pointer, count: size)
                if bytes.contains(0) { return nil }
                return String(bytes: bytes, encoding: .utf8)
            }
            guard let name = text(key, keySize) else {
                collected.malformed = "a header or query parameter name contains a NUL character or is not UTF-8"
                return MHD_Result.NO
            }
            let content: String
            if value == nil {
                content = ""
            } else if let decoded = text(value, valueSize) {
                content = decoded
            } else {
                collected.malformed = "the value of \(name) contains a NUL character or is not UTF-8"
                return MHD_Result.NO
            }
            if kind == MHD_ValueKind.HEADER_KIND {
                collected.headers.append((name, content))
            } else if collected.query[name] == nil {
                collected.query[name] = content
            } else {
                // `space=alice&space=bob`: which one was meant is not for the relay to guess.
                collected.malformed = "the query parameter \(name) is given twice"
                return MHD_Result.NO
            }
            return MHD_Result.YES
        }
        let context = Unmanaged.passUnretained(collected).toOpaque()
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values_n(connection, MHD_ValueKind.HEADER_KIND, iterator, context)
            if collected.malformed == nil {
                _ = MHD_get_connection_values_n(connection, MHD_ValueKind.GET_ARGUMENT_KIND, iterator, context)
            }
        }
        return (HTTPHeaders(collected.headers), collected.query, collected.malformed)
    }
}
