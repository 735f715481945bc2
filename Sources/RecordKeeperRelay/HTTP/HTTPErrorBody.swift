import Foundation
import RecordKeeperCoding
import RecordKeeperSync

/// The body of every error response, from the server itself or from the relay:
/// `{"error":{"code":"payloadTooLarge","message":"…","maxBodyBytes":8388608}}` (the protocol's
/// own type, which devices decode too).
typealias HTTPErrorBody = RelayWire.ErrorBody

/// The server's own error responses.
enum ErrorBodies {
    static func code(for status: Int) -> String {
        switch status {
        case 400: "badRequest"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "notFound"
        case 405: "methodNotAllowed"
        case 410: "behindHorizon"
        case 413: "payloadTooLarge"
        case 503: "unavailable"
        default: status >= 500 ? "serverFailure" : "error"
        }
    }

    static func response(_ status: Int, _ message: String, maxBodyBytes: Int? = nil) -> HTTPResponse {
        let body = HTTPErrorBody(error: .init(code: code(for: status), message: message, maxBodyBytes: maxBodyBytes))
        do {
            return HTTPResponse(status: status, json: try RecordJSONEncoder().encode(body))
        } catch {
            // Two strings and an integer always encode; if not, say so in plain text.
            return HTTPResponse(status: status, text: message)
        }
    }

    static func tooLarge(limit: Int) -> HTTPResponse {
        guard limit > 0 else { return response(413, "this endpoint takes no request body", maxBodyBytes: 0) }
        return response(413, "the request body is larger than \(limit) bytes", maxBodyBytes: limit)
    }

    static func unavailable() -> HTTPResponse {
        var response = response(503, "the server is shutting down")
        response.headers.set("Retry-After", "1")
        return response
    }
}
