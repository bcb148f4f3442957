import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashJSON
import XCTest

/// Sign in with Apple: identity-token verification (unit) and `POST /v1/auth/apple`
/// against the real server with a locally generated key set (spec §3).
final class AppleSignInTests: XCTestCase {
    nonisolated(unsafe) static var apple: TestRSAKey?
    nonisolated(unsafe) static var attacker: TestRSAKey?
    nonisolated(unsafe) static var server: TestServer?
    nonisolated(unsafe) static var jwksPath = ""
    static let audience = "app.suplash.ios"

    override class func setUp() {
        apple = try? TestRSAKey(kid: "apple-1")
        attacker = try? TestRSAKey(kid: "apple-1")  // same kid, other key: a forged signature
        let dir = TestServer.makeDataDir()
        jwksPath = dir + "/jwks.json"
        if let apple { try? TestRSAKey.writeJWKS([apple], to: jwksPath) }
        server = try? TestServer(environment: [
            "SUPLASH_APPLE_JWKS_URL": "file://" + jwksPath,
            "SUPLASH_APPLE_AUDIENCES": "com.example.other, \(audience)",
        ])
    }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func keys() throws -> (TestRSAKey, TestRSAKey) {
        (try XCTUnwrap(Self.apple), try XCTUnwrap(Self.attacker))
    }

    var now: Int64 { Int64(Date().timeIntervalSince1970) }

    func claims(
        sub: String = "000123.\(UUID().uuidString.lowercased())", email: String? = nil, verified: JSONValue = .bool(true),
        aud: JSONValue = .string(audience), iss: String = "https://appleid.apple.com", iat: Int64? = nil,
        exp: Int64? = nil, nonce: String? = nil
    ) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("iss", .string(iss)), ("aud", aud), ("exp", .int(exp ?? now + 600)), ("iat", .int(iat ?? now)),
            ("sub", .string(sub)),
        ]
        if let nonce { members.append(("nonce", .string(SHA256.hex(Array(nonce.utf8))))) }
        if let email {
            members.append(("email", .string(email)))
            members.append(("email_verified", verified))
        }
        return .object(members)
    }

    func verifier(jwks: String? = nil) -> AppleSignIn {
        AppleSignIn(keySet: AppleKeySet(source: jwks ?? Self.jwksPath), audiences: [Self.audience])
    }

    func code(_ error: @autoclosure () throws -> AppleIdentity) -> String? {
        do {
            _ = try error()
            return nil
        } catch let e as APIError {
            return e.code + ":" + (e.detail ?? "")
        } catch {
            return "other"
        }
    }

    // MARK: Unit: token checks

    func testVerifiesAGoodTokenAndReadsTheIdentity() throws {
        let (apple, _) = try keys()
        let token = apple.token(claims(sub: "s-1", email: "x@privaterelay.appleid.com", verified: .string("true"), nonce: "raw-nonce"))
        let identity = try verifier().verify(token: token, nonce: "raw-nonce", now: now)
        XCTAssertEqual(
            identity, AppleIdentity(sub: "s-1", email: "x@privaterelay.appleid.com", emailVerified: true, audience: Self.audience))
        // aud may be an array.
        let listed = apple.token(claims(sub: "s-2", aud: .array([.string("other"), .string(Self.audience)])))
        XCTAssertEqual(try verifier().verify(token: listed, nonce: nil, now: now).sub, "s-2")
    }

    func testRefusesEveryBadToken() throws {
        let (apple, attacker) = try keys()
        let v = verifier()
        func reason(_ token: String, nonce: String? = nil) -> String? { code(try v.verify(token: token, nonce: nonce, now: now)) }
        XCTAssertEqual(reason(attacker.token(claims())), "invalid_identity_token:The Apple identity token is not acceptable: signature.")
        XCTAssertEqual(
            reason(apple.token(claims(aud: "com.evil.app"))), "invalid_identity_token:The Apple identity token is not acceptable: audience.")
        XCTAssertEqual(
            reason(apple.token(claims(iss: "https://evil.example"))), "invalid_identity_token:The Apple identity token is not acceptable: issuer.")
        XCTAssertEqual(
            reason(apple.token(claims(iat: now - 4000, exp: now - 3000))),
            "invalid_identity_token:The Apple identity token is not acceptable: expired.")
        XCTAssertEqual(
            reason(apple.token(claims(iat: now + 3600))), "invalid_identity_token:The Apple identity token is not acceptable: issued in the future.")
        XCTAssertEqual(
            reason(apple.token(claims(nonce: "n-1")), nonce: "n-2"), "invalid_identity_token:The Apple identity token is not acceptable: nonce.")
        XCTAssertEqual(
            reason(apple.token(claims(nonce: "n-1"))), "invalid_identity_token:The Apple identity token is not acceptable: nonce.",
            "a token with a nonce needs the client's raw nonce")
        XCTAssertEqual(
            reason(apple.token(claims()), nonce: "n-1"), "invalid_identity_token:The Apple identity token is not acceptable: nonce.",
            "a client nonce needs a token nonce")
        XCTAssertEqual(
            reason(apple.token(claims(), headerKid: "apple-2")), "invalid_identity_token:The Apple identity token is not acceptable: unknown key.")
        // Tampered payload with the original signature.
        let good = apple.token(claims(sub: "victim"))
        let parts = good.split(separator: ".")
        let forged = parts[0] + "." + Base64URL.encode(claims(sub: "attacker").serialized()) + "." + parts[2]
        XCTAssertEqual(reason(String(forged)), "invalid_identity_token:The Apple identity token is not acceptable: signature.")
        XCTAssertNotNil(reason("not.a.jwt"))
        XCTAssertNil(reason(apple.token(claims(nonce: "n-1")), nonce: "n-1"))
    }

    func testUnreachableKeySetIs503() {
        let v = verifier(jwks: "/nonexistent/jwks.json")
        XCTAssertEqual(code(try v.verify(token: "a.b.c", nonce: nil, now: now))?.hasPrefix("unavailable"), true)
        let http = verifier(jwks: "http://127.0.0.1:9/keys")  // discard port: nothing listens
        XCTAssertEqual(code(try http.verify(token: "a.b.c", nonce: nil, now: now))?.hasPrefix("unavailable"), true)
    }

    func testTokensThatCannotBeAcceptedAreRefusedWithoutFetchingKeys() {
        // Nothing listens on the discard port: a fetch would answer 503 unavailable.
        let unconfigured = AppleSignIn(keySet: AppleKeySet(source: "http://127.0.0.1:9/keys"), audiences: [])
        XCTAssertEqual(
            code(try unconfigured.verify(token: "a.b.c", nonce: nil, now: now)),
            "invalid_identity_token:The Apple identity token is not acceptable: audience.")
        let configured = verifier(jwks: "http://127.0.0.1:9/keys")
        for garbage in ["garbage", "a.b", "a..c", "a.b.c.d"] {
            XCTAssertEqual(
                code(try configured.verify(token: garbage, nonce: nil, now: now)),
                "invalid_identity_token:The Apple identity token is not acceptable: malformed.", garbage)
        }
    }

    func testKeySetRefreshesOnUnknownKidAtMostOncePerInterval() throws {
        let (apple, _) = try keys()
        let rotated = try TestRSAKey(kid: "apple-2")
        let path = TestServer.makeDataDir() + "/jwks.json"
        try TestRSAKey.writeJWKS([apple], to: path)
        let eager = AppleKeySet(source: path, minimumRefreshInterval: 0)
        let lazy = AppleKeySet(source: "file://" + path, minimumRefreshInterval: 60)
        XCTAssertEqual(Set(try eager.keys(for: "apple-1").keys), ["apple-1"])
        XCTAssertEqual(Set(try lazy.keys(for: "apple-1").keys), ["apple-1"])
        try TestRSAKey.writeJWKS([apple, rotated], to: path)
        XCTAssertEqual(Set(try eager.keys(for: "apple-1").keys), ["apple-1"], "a known kid does not refetch")
        XCTAssertEqual(Set(try eager.keys(for: "apple-2").keys), ["apple-1", "apple-2"], "an unknown kid refetches")
        XCTAssertEqual(Set(try lazy.keys(for: "apple-2").keys), ["apple-1"], "at most one fetch per interval")
        // A failed refresh keeps the cached keys.
        try FileManager.default.removeItem(atPath: path)
        XCTAssertEqual(Set(try eager.keys(for: "apple-3").keys), ["apple-1", "apple-2"])
        let v = AppleSignIn(keySet: eager, audiences: [Self.audience])
        XCTAssertEqual(try v.verify(token: rotated.token(claims(sub: "r")), nonce: nil, now: now).sub, "r")
    }

    // MARK: Integration: POST /v1/auth/apple

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    func signIn(_ token: String, nonce: String? = nil, displayName: String? = nil) throws -> TestResponse {
        var body: [(String, JSONValue)] = [("identityToken", .string(token))]
        if let nonce { body.append(("nonce", .string(nonce))) }
        if let displayName { body.append(("displayName", .string(displayName))) }
        return try srv().request("POST", "/v1/auth/apple", json: .object(body))
    }

    func testNewUserThenSameUserBySub() throws {
        let (apple, _) = try keys()
        let email = "r\(UUID().uuidString.prefix(8).lowercased())@privaterelay.appleid.com"
        let sub = "000999.\(UUID().uuidString)"
        let first = try signIn(apple.token(claims(sub: sub, email: email, nonce: "nonce-1")), nonce: "nonce-1", displayName: "Ayşe")
        XCTAssertEqual(first.status, 201, first.text)
        let user = try XCTUnwrap(first.json?["user"])
        XCTAssertEqual(user["email"]?.stringValue, email, "private-relay emails work like any other")
        XCTAssertEqual(user["emailVerified"]?.boolValue, true)
        XCTAssertEqual(user["displayName"]?.stringValue, "Ayşe")
        let token = try XCTUnwrap(first.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try srv().request("GET", "/v1/users/me", token: token).status, 200)
        // The same sub again (Apple omits the email on later sign-ins): the same user, 200.
        let again = try signIn(apple.token(claims(sub: sub)))
        XCTAssertEqual(again.status, 200, again.text)
        XCTAssertEqual(again.json?["user"]?["id"]?.stringValue, user["id"]?.stringValue)
        // No password: login fails exactly like a wrong password.
        let login = try srv().request("POST", "/v1/auth/login", json: ["email": .string(email), "password": "any password at all"])
        XCTAssertEqual(login.status, 401)
        XCTAssertEqual(login.json?["code"]?.stringValue, "invalid_credentials")
    }

    func testBadTokensAre401AndBadBodies422() throws {
        let (apple, attacker) = try keys()
        for token in [
            attacker.token(claims()), apple.token(claims(aud: "x")), apple.token(claims(iss: "https://x")),
            apple.token(claims(iat: now - 4000, exp: now - 3000)), apple.token(claims(), headerKid: "nope"),
        ] {
            let r = try signIn(token)
            XCTAssertEqual(r.status, 401, r.text)
            XCTAssertEqual(r.json?["code"]?.stringValue, "invalid_identity_token")
            XCTAssertEqual(r.header("Content-Type"), "application/problem+json")
        }
        let mismatch = try signIn(apple.token(claims(nonce: "a")), nonce: "b")
        XCTAssertEqual(mismatch.status, 401)
        let missing = try srv().request("POST", "/v1/auth/apple", json: ["nonce": "x"])
        XCTAssertEqual(missing.status, 422)
        let unknown = try srv().request("POST", "/v1/auth/apple", json: ["identityToken": "x", "extra": 1])
        XCTAssertEqual(unknown.status, 422)
    }

    func testLinksToAnExistingAccountOnlyWhenAppleVerifiedTheEmail() throws {
        let (apple, _) = try keys()
        let s = try srv()
        let existing = try s.signUp(password: "password for linking")
        // Apple does not vouch for the email: no link, and the email is taken.
        let unverified = try signIn(apple.token(claims(email: existing.email, verified: .bool(false))))
        XCTAssertEqual(unverified.status, 409, unverified.text)
        XCTAssertEqual(unverified.json?["code"]?.stringValue, "email_taken")
        // Verified by Apple: linked to the same user (200), email now verified.
        let sub = "link.\(UUID().uuidString)"
        let linked = try signIn(apple.token(claims(sub: sub, email: existing.email.uppercased(), verified: .string("true"))))
        XCTAssertEqual(linked.status, 200, linked.text)
        XCTAssertEqual(linked.json?["user"]?["id"]?.stringValue, existing.id)
        XCTAssertEqual(linked.json?["user"]?["emailVerified"]?.boolValue, true)
        // The account's email was never verified, so whoever set its password loses it and its sessions.
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: existing.token).status, 401)
        XCTAssertEqual(try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(existing.refresh)]).status, 401)
        let login = try s.request("POST", "/v1/auth/login", json: ["email": .string(existing.email), "password": "password for linking"])
        XCTAssertEqual(login.status, 401)
        let newToken = try XCTUnwrap(linked.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: newToken).status, 200)
        // The sub stays linked.
        XCTAssertEqual(try signIn(apple.token(claims(sub: sub))).json?["user"]?["id"]?.stringValue, existing.id)
    }

    func testLinkingAVerifiedAccountKeepsItsPasswordAndSessions() throws {
        let (apple, _) = try keys()
        let s = try srv()
        let existing = try s.signUp(password: "verified account pw")
        let code = try XCTUnwrap(MailFiles.latestCode(dataDir: s.dataDir, to: existing.email, wait: 10))
        XCTAssertEqual(try s.request("POST", "/v1/auth/email/verify", json: ["code": .string(code)], token: existing.token).status, 204)
        let linked = try signIn(apple.token(claims(email: existing.email)))
        XCTAssertEqual(linked.status, 200, linked.text)
        XCTAssertEqual(linked.json?["user"]?["id"]?.stringValue, existing.id)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: existing.token).status, 200)
        let login = try s.request("POST", "/v1/auth/login", json: ["email": .string(existing.email), "password": "verified account pw"])
        XCTAssertEqual(login.status, 200)
    }
}
