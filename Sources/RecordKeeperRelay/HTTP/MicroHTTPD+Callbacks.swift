internal import CMicroHTTPD
import Foundation

/// The C callbacks libmicrohttpd calls, on the polling thread that owns the connection. Each
/// finds the server's ``HTTPServerCore`` in its context pointer (kept alive while the daemon
/// runs) and the request's ``HTTPExchange`` in the per-request pointer.
enum MicroHTTPDCallbacks {
    /// Called after the headers, for each piece of the body, at the end of the body, and again
    /// after the connection is resumed.
    static let access: MHD_AccessHandlerCallback = {
        context, connection, url, method, _, upload, uploadSize, requestContext in
        guard let context, let connection, let uploadSize, let requestContext,
            let pointer = requestContext.pointee
        else { return MHD_Result.NO }
        let core = Unmanaged<HTTPServerCore>.fromOpaque(context).takeUnretainedValue()
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(pointer).takeUnretainedValue()
        let accepted: Bool
        switch exchange.phase {
        case .headers:
            accepted = core.headersReceived(
                exchange, on: connection, method: method.map { String(cString: $0) } ?? "",
                path: url.map { String(cString: $0) } ?? "")
        case .body where uploadSize.pointee > 0:
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            accepted = core.bodyReceived(exchange, UnsafeRawBufferPointer(start: upload, count: count))
        case .body:
            accepted = core.requestReceived(exchange, on: connection)
        case .handling:
            accepted = core.handlerFinished(exchange, on: connection)
        case .responded:
            uploadSize.pointee = 0
            accepted = true
        }
        return accepted ? MHD_Result.YES : MHD_Result.NO
    }

    /// The request line arrived: the request's exchange begins (its pointer becomes the
    /// per-request context, released in ``requestCompleted``).
    static let requestLineReceived: recordkeeper_mhd_uri_log_callback = { context, _, connection in
        guard let context, let connection else { return nil }
        let core = Unmanaged<HTTPServerCore>.fromOpaque(context).takeUnretainedValue()
        let exchange = core.requestStarted(on: connection)
        return Unmanaged.passRetained(exchange).toOpaque()
    }

    /// The request ended: its response was sent, or the connection closed before that.
    static let requestCompleted: MHD_RequestCompletedCallback = { context, connection, requestContext, termination in
        guard let context, let connection, let requestContext, let pointer = requestContext.pointee else { return }
        requestContext.pointee = nil
        let core = Unmanaged<HTTPServerCore>.fromOpaque(context).takeUnretainedValue()
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(pointer).takeRetainedValue()
        core.requestCompleted(
            exchange, on: connection, delivered: termination == MHD_RequestTerminationCode.REQUEST_TERMINATED_COMPLETED_OK)
    }

    static let connectionNotified: MHD_NotifyConnectionCallback = { context, connection, _, code in
        guard let context, let connection else { return }
        let core = Unmanaged<HTTPServerCore>.fromOpaque(context).takeUnretainedValue()
        if code == MHD_ConnectionNotificationCode.CONNECTION_NOTIFY_STARTED {
            core.connectionStarted(connection, socket: MicroHTTPDConnection.socket(of: connection))
        } else {
            core.connectionClosed(connection)
        }
    }

    /// libmicrohttpd's own messages (it cannot bind, a TLS handshake failed, the connection
    /// limit was reached).
    static let libraryMessage: MHD_LogCallback = { context, format, arguments in
        guard let context, let format, let arguments else { return }
        var buffer = [CChar](repeating: 0, count: 512)
        _ = vsnprintf(&buffer, buffer.count, format, arguments)
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let message = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        Unmanaged<HTTPServerCore>.fromOpaque(context).takeUnretainedValue().libraryMessage(message)
    }
}
