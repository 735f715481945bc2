import Foundation
import RecordKeeperCoding
import RecordKeeperSync

/// A request the relay refuses, with the response that says why.
struct RelayRefusal: Error {
    let response: HTTPResponse
    /// The name counted in `recordkeeper_relay_refused_total`, if it is counted.
    let reason: String?
    /// The token's space, when the token was valid (for the log line).
    var space: String?
}

extension RelayRefusal {
    /// A push with a read-only token (403), refused before its body is read and again by
    /// the handler.
    static func readOnlyPush(space: String) -> RelayRefusal {
        RelayResponses.forbidden("the token is read-only: it cannot push", reason: "read_only", space: space)
    }
}

/// The relay's responses.
enum RelayResponses {
    static func json(_ status: Int, _ value: some Encodable) -> HTTPResponse {
        do {
            return HTTPResponse(status: status, json: try RecordJSONEncoder().encode(value))
        } catch {
            return ErrorBodies.response(500, "the relay could not encode its answer: \(error)")
        }
    }

    /// A pull page, its changes written by ``SyncWireJSON`` (the encoder's bytes, faster).
    static func page(_ page: SyncPage) -> HTTPResponse {
        do {
            return HTTPResponse(status: 200, json: try SyncWireJSON.encode(page))
        } catch {
            return ErrorBodies.response(500, "the relay could not encode its answer: \(error)")
        }
    }

    /// Several pages in one answer: each page's JSON on a line of its own, their number in
    /// ``RecordKeeper/RelayWire/pagesHeader``.
    static func pages(_ pages: [SyncPage]) -> HTTPResponse {
        do {
            // One buffer for every page, made into the body once.
            var body: [UInt8] = []
            body.reserveCapacity(pages.reduce(0) { $0 + 256 + $1.changes.count * 224 })
            let encoder = RecordJSONEncoder()
            for page in pages {
                try SyncWireJSON.append(page, to: &body, encoder: encoder)
                body.append(UInt8(ascii: "\n"))
            }
            var response = HTTPResponse(
                status: 200, headers: HTTPHeaders([("Content-Type", "application/x-ndjson")]), body: Data(body))
            response.headers.set(RelayWire.pagesHeader, String(pages.count))
            return response
        } catch {
            return ErrorBodies.response(500, "the relay could not encode its answer: \(error)")
        }
    }

    static func badRequest(_ message: String) -> RelayRefusal {
        RelayRefusal(response: ErrorBodies.response(400, message), reason: "bad_request")
    }

    /// 401: no token, or one that is not valid (RFC 6750 §3).
    static func unauthorized(_ message: String, reason: String, invalidToken: Bool) -> RelayRefusal {
        var response = ErrorBodies.response(401, message)
        response.headers.set(
            "WWW-Authenticate",
            invalidToken ? #"Bearer realm="recordkeeper", error="invalid_token""# : #"Bearer realm="recordkeeper""#)
        return RelayRefusal(response: response, reason: reason)
    }

    /// 403: a valid token that does not grant this request.
    static func forbidden(_ message: String, reason: String, space: String) -> RelayRefusal {
        var response = ErrorBodies.response(403, message)
        response.headers.set("WWW-Authenticate", #"Bearer realm="recordkeeper", error="insufficient_scope""#)
        return RelayRefusal(response: response, reason: reason, space: space)
    }

    /// The answer to a failed call of the sync server. The device sees the kind of failure;
    /// the details (which may name the database) go to the relay's log.
    static func failure(_ error: any Error, operation: String, space: String, log: (String) -> Void) -> RelayRefusal {
        if let error = error as? SyncError {
            switch error.code {
            case .invalidRequest:
                return RelayRefusal(response: ErrorBodies.response(400, error.message), reason: "bad_request", space: space)
            case .behindHorizon:
                // 410 Gone: the changes after this cursor are no longer all there.
                return RelayRefusal(
                    response: ErrorBodies.response(410, error.message),
                    reason: nil, space: space)
            case .unreachable:
                log("event=server_unreachable operation=\(operation) error=" + HTTPRequestSummary.logValue(error.description))
                var response = ErrorBodies.response(503, "the sync server cannot be reached; nothing was applied, try again")
                response.headers.set("Retry-After", "1")
                return RelayRefusal(response: response, reason: nil, space: space)
            default:
                break
            }
        }
        if error is CancellationError {
            var response = ErrorBodies.response(503, "the relay is shutting down; try again")
            response.headers.set("Retry-After", "1")
            return RelayRefusal(response: response, reason: nil, space: space)
        }
        log("event=server_failure operation=\(operation) error=" + HTTPRequestSummary.logValue(String(describing: error)))
        return RelayRefusal(
            response: ErrorBodies.response(500, "the sync server failed the \(operation); its transaction was rolled back"),
            reason: nil, space: space)
    }

    /// What is wrong with a body that does not decode, in a sentence.
    static func describe(_ error: any Error) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            let text = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
            return text.isEmpty ? "the body" : String(text.drop { $0 == "." })
        }
        switch error {
        case DecodingError.dataCorrupted(let context):
            // RecordJSONDecoder's "Number 1e30 does not fit in Int64.": say it in JSON's words.
            let text = context.debugDescription
            if !context.codingPath.isEmpty, text.hasPrefix("Number "), let fit = text.range(of: " does not fit in ") {
                let number = text[text.index(text.startIndex, offsetBy: 7)..<fit.lowerBound]
                let type = text[fit.upperBound...]
                let whole = type.hasPrefix("Int") || type.hasPrefix("UInt")
                return "\(path(context.codingPath)) is \(number), which is not "
                    + (whole ? "a whole number from \(Int64.min) to \(Int64.max)" : "a finite number")
            }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing"
        case DecodingError.typeMismatch(let type, let context):
            return "\(path(context.codingPath)) is not \(Self.article(type))"
        case DecodingError.valueNotFound(let type, let context):
            return "\(path(context.codingPath)) is null, not \(Self.article(type))"
        default:
            return "it cannot be read"
        }
    }

    /// What a value of `type` is in JSON's words ("a whole number", "an object"), never a
    /// Swift type name a client could not act on.
    private static func article(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt64.Type, is UInt.Type: return "a whole number"
        case is Double.Type, is Float.Type: return "a number"
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        default: break
        }
        // Every other wire type is a JSON object, or a list of them.
        return String(describing: type).hasPrefix("Array<") ? "an array" : "an object"
    }
}
