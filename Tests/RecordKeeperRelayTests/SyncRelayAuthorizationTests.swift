import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// The space comes from the token only; tokens that are not valid, or do not grant a request,
/// are refused before anything is read or written.
@Suite(.timeLimit(.minutes(10))) struct SyncRelayAuthorizationTests {
    @Test func `bob's token gets 403 for alice's space and nothing of hers is read or written`() async throws {
        let inner = InMemorySyncServer()
        let alices = SyncOperation.writing(["diary": "dear diary"], sequence: 1)
        _ = try await inner.push(space: "alice", operations: [alices])
        try await withRelay(server: inner) { relay in
            let bob = try RelayHarness.token(space: "bob")
            let overwrite = SyncOperation.writing(["diary": "bob was here"], device: "bobs-phone", sequence: 1)
            let pushed = try await relay.push([overwrite], token: bob, space: "alice")
            #expect(pushed.status == 403)
            #expect(pushed.errorMessage == "the token does not grant space 'alice'")
            #expect(pushed.header("WWW-Authenticate")?.contains(#"error="insufficient_scope""#) == true)
            let pulled = try await relay.pull("after=0&space=alice", token: bob)
            #expect(pulled.status == 403)
            #expect(!pulled.text.contains("dear diary"))
            #expect(relay.server.calls == (pushes: 0, pulls: 0), "a refused request reached the server")

            // Bob's own requests are bob's: even with alice's space nowhere, he sees only his.
            let own = try await relay.pull("after=0", token: bob).decoded(SyncPage.self)
            #expect(own.changes.isEmpty)
        }
        let alice = try await inner.pull(space: "alice", after: .start, limit: 10)
        #expect(alice.changes.map(\.value) == [.payload(Data("dear diary".utf8))])
        #expect(alice.cursor == SyncCursor(counter: 1))
        #expect(try await inner.pull(space: "bob", after: .start, limit: 10).changes.isEmpty)
    }

    @Test func `a space written decomposed or precomposed in a token is one space`() async throws {
        let inner = InMemorySyncServer()
        try await withRelay(server: inner) { relay in
            let decomposed = try RelayHarness.token(RelayAccess(space: "x"), extra: ["space": .string("cafe\u{301}")])
            let precomposed = try RelayHarness.token(RelayAccess(space: "x"), extra: ["space": .string("caf\u{E9}")])
            let pushed = try await relay.push([.writing(["k": "v"], sequence: 1)], token: decomposed)
            #expect(pushed.status == 200)
            let page = try await relay.pull("after=0", token: precomposed).decoded(SyncPage.self)
            #expect(page.changes.map(\.key) == ["k"])
            // A request naming the space in the other form names the token's space.
            #expect(try await relay.pull("after=0&space=caf%C3%A9", token: decomposed).status == 200)
            #expect(try await relay.pull("after=0&space=cafe%CC%81", token: precomposed).status == 200)
        }
        // The server holds it under the NFC name, as a store syncing "café" directly names it.
        #expect(try await inner.pull(space: "caf\u{E9}", after: .start, limit: 10).changes.map(\.key) == ["k"])
    }

    @Test func `a read-only token pulls but cannot push`() async throws {
        try await withRelay { relay in
            let token = try RelayHarness.token(space: "alice", readOnly: true)
            let pushed = try await relay.push([.writing(["k": "v"], sequence: 1)], token: token)
            #expect(pushed.status == 403)
            #expect(pushed.errorMessage == "the token is read-only: it cannot push")
            #expect(try await relay.pull("after=0", token: token).status == 200)
            #expect(relay.server.calls == (pushes: 0, pulls: 1))
        }
    }

    @Test func `a collection list refuses pushes to other collections whole and filters pulls`() async throws {
        let inner = InMemorySyncServer()
        _ = try await inner.push(space: "alice", operations: [
            .writing(["a": "1"], in: "notes", sequence: 1), .writing(["b": "2"], in: "private", sequence: 2),
        ])
        try await withRelay(server: inner) { relay in
            let token = try RelayHarness.token(space: "alice", collections: ["notes"])
            let mixed = SyncOperation(
                device: "phone", sequence: 3,
                changes: [
                    SyncChange(collection: "notes", key: "c", value: .payload(Data("3".utf8)), base: nil),
                    SyncChange(collection: "private", key: "d", value: .payload(Data("4".utf8)), base: nil),
                ])
            let pushed = try await relay.push([mixed], token: token)
            #expect(pushed.status == 403)
            #expect(pushed.errorMessage == "the token does not grant collection 'private'; nothing was applied")
            #expect(relay.server.calls.pushes == 0)
            let page = try await relay.pull("after=0&collections=%5B%22notes%22%5D", token: token).decoded(SyncPage.self)
            #expect(page.changes.map(\.collection) == ["notes"])
            #expect(page.cursor == SyncCursor(counter: 2), "the cursor passes what the token may not see")
            let allowed = try await relay.push([.writing(["c": "3"], in: "notes", sequence: 3)], token: token)
            #expect(allowed.status == 200)
        }
    }

    @Test func `tokens that are missing or not valid are 401 with the reason, and reach nothing`() async throws {
        try await withRelay({ $0.verifier = Self.verifier(audience: "relay") }) { relay in
            let access = RelayAccess(space: "alice")
            let audience: [String: JWTJSONValue] = ["aud": .string("relay")]
            let good = try RelayHarness.token(access, extra: audience)
            #expect(try await relay.pull("", token: good).status == 200)
            let noneToken = Data(#"{"alg":"none"}"#.utf8).base64URL + "." + Data(#"{"space":"alice","exp":9999999999}"#.utf8).base64URL + "."
            let wrongKey = try JWTSigner(key: .hs256(secret: Array("another secret that is long enough!!".utf8)))
                .sign(access.claims(expiresAt: RelayHarness.now + 60).merging(audience) { $1 })
            let cases: [(String?, String)] = [
                (nil, "no bearer token (Authorization: Bearer …)"),
                (try RelayHarness.token(access, expiresIn: -61, extra: audience), "the token expired at 2033-05-18T03:32:19Z"),
                (try RelayHarness.token(access, extra: audience.merging(["nbf": .number(RelayHarness.now + 3600)]) { $1 }),
                 "the token is not valid before 2033-05-18T04:33:20Z"),
                (wrongKey, "the token's signature is not valid"),
                (noneToken, "the token is signed with 'none'; only HS256 is accepted"),
                (try RelayHarness.token(access, extra: ["aud": .string("billing")]), "the token is meant for another audience"),
                (try JWTSigner(key: .hs256(secret: RelayHarness.secret)).sign(
                    ["exp": .number(RelayHarness.now + 60), "aud": .string("relay")]), "the token has no space claim"),
                ("garbage", "the token is malformed: it is not three dot-separated parts"),
            ]
            for (token, message) in cases {
                let headers = token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
                let push = try await request(
                    "POST", relay.base + "/v1/push", headers: headers,
                    body: try JSONEncoder().encode(RelayWire.PushRequest(operations: [.writing(["k": "v"], sequence: 1)])))
                let pull = try await request("GET", relay.base + "/v1/pull", headers: headers)
                for response in [push, pull] {
                    #expect(response.status == 401, "\(message)")
                    #expect(response.errorMessage == message)
                    #expect(response.header("WWW-Authenticate")?.hasPrefix(#"Bearer realm="recordkeeper""#) == true)
                    if let token { #expect(!response.text.contains(token)) }
                }
            }
            #expect(relay.server.calls == (pushes: 0, pulls: 1), "only the good token's pull reached the server")
            // Each refusal's log line names its reason (a fixed name), never the token.
            let refusedLines = { relay.lines.lines.filter { $0.contains("status=401") } }
            try await waitUntil("every refusal logged", polling: .milliseconds(10)) { refusedLines().count == cases.count * 2 }
            for reason in ["no_token", "expired", "not_yet_valid", "bad_signature", "wrong_algorithm", "wrong_audience",
                           "missing_claim", "malformed"] {
                #expect(refusedLines().contains { $0.contains(" reason=\(reason)") }, "\(reason): \(refusedLines())")
            }
            for token in cases.compactMap(\.0) { #expect(!refusedLines().contains { $0.contains(token) }) }
        }
    }

    private static func verifier(audience: String) -> JWTVerifier {
        var configuration = JWTVerifier.Configuration(key: try! .hs256(secret: RelayHarness.secret))
        configuration.audience = audience
        configuration.now = { Date(timeIntervalSince1970: RelayHarness.now) }
        return JWTVerifier(configuration)
    }
}

extension Data {
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test(arguments: ["", "Authorization: Bearer not.a.token\r\n"])
    func `a push without a valid token is answered 401 before its body is sent`(authorization: String) async throws {
        try await withRelay { relay in
            let connection = try await RawConnection.open(port: relay.http.port)
            // Only the headers of an 8 MB push: the answer must not wait for (or buffer) a body.
            try await connection.send(
                "POST /v1/push HTTP/1.1\r\nHost: x\r\n\(authorization)Content-Type: application/json\r\n"
                    + "Content-Length: 8000000\r\n\r\n")
            let response = try await connection.readResponse()
            #expect(response.status == 401)
            #expect(relay.server.calls == (pushes: 0, pulls: 0))
        }
    }

    @Test(arguments: [
        ("POST /v1/push?space=alice&space=bob HTTP/1.1\r\nHost: x\r\n", 400),
        ("POST /v1/push HTTP/1.1\r\nHost: x\r\nX-Odd: NOT-UTF8\r\n", 400),
        ("POST /v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer READONLY\r\n", 403),
    ])
    func `a push that would be refused anyway is answered before its body is sent`(head: String, status: Int) async throws {
        try await withRelay { relay in
            let token = try RelayHarness.token(space: "alice", readOnly: true)
            let connection = try await RawConnection.open(port: relay.http.port)
            // Only the headers of an 8 MB push, without a valid token in the first two (a
            // malformed request is not screened, so its body must not be read either).
            let parts = head.replacingOccurrences(of: "READONLY", with: token).components(separatedBy: "NOT-UTF8")
            let bytes = parts.map { Data($0.utf8) }.joined(separator: Data([0xFF]))
            try await connection.send(Data(bytes) + Data("Content-Type: application/json\r\nContent-Length: 8000000\r\n\r\n".utf8))
            guard await connection.hasAnswer(withinMilliseconds: 20_000) else {
                Issue.record("not answered without the body: the relay waits to read (and buffer) it")
                return
            }
            let response = try await connection.readResponse()
            #expect(response.status == status)
            #expect(relay.server.calls == (pushes: 0, pulls: 0))
        }
    }

    @Test(arguments: ["/v1/pull?after=0", "/v1/health", "/metrics"])
    func `a request body on an endpoint that reads none is refused unread`(path: String) async throws {
        try await withRelay { relay in
            let token = try RelayHarness.token(space: "alice")
            let connection = try await RawConnection.open(port: relay.http.port)
            try await connection.send(
                "GET \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: 8000000\r\n\r\n")
            let response = try await connection.readResponse()
            #expect(response.status == 413)
            #expect(String(decoding: response.body, as: UTF8.self).contains("this endpoint takes no request body"))
            #expect(relay.server.calls == (pushes: 0, pulls: 0))
        }
    }
}
