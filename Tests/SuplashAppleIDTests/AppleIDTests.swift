import SuplashCrypto
import SuplashHTTPClient
import SuplashJSON
import Synchronization
import XCTest

@testable import SuplashAppleID

/// A test-only P-256 key (PKCS#8 PEM, the `.p8` layout).
private let testSignInKeyPEM = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5K94E6L+qgPkE9kQ
    o1bCFv98KNXK2ujBmmTszoQXvoWhRANCAARV9tSlq395rpTd5pmyREXjmTkKmE72
    Ely7H8mCkMtdeNxDh96N3Fbm8/Qy4QOMxO80NTGOJiSLMlp06b0a96ex
    -----END PRIVATE KEY-----
    """

/// Another test-only P-256 key, for a signature that must not verify.
private let otherKeyPEM = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgrB9bzbcgbxCJU9sj
    yFtFP+GUoKMjxs1wLIKTKTcbRUKhRANCAASDQjqN2wzE4nrRoZZ7q+RNAU5sTGYX
    CDN+1VZvm7TrrFNieqarhj1+vf0FSOswvRf2pu70BuTC4QakOuY7GuUX
    -----END PRIVATE KEY-----
    """

/// A clock the test moves by hand (Unix seconds).
private final class ManualClock: Sendable {
    private let value: Mutex<Int64>
    init(_ start: Int64) { value = Mutex(start) }
    func now() -> Int64 { value.withLock { $0 } }
    func set(_ time: Int64) { value.withLock { $0 = time } }
    func advance(_ seconds: Int64) { value.withLock { $0 += seconds } }
}

/// The header and claims of a compact JWS, decoded without verification.
private func parts(_ token: String) throws -> (header: JSONValue, claims: JSONValue) {
    let segments = token.split(separator: ".").map(String.init)
    XCTAssertEqual(segments.count, 3)
    let header = try JSONParser.parse(XCTUnwrap(Base64URL.decode(segments[0])), maxDepth: 4)
    let claims = try JSONParser.parse(XCTUnwrap(Base64URL.decode(segments[1])), maxDepth: 4)
    return (header, claims)
}

private func int(_ value: JSONValue?) -> Int64? {
    guard case .number(let n)? = value else { return nil }
    return n.int64Value
}

final class AppleClientSecretTests: XCTestCase {
    let start: Int64 = 1_790_000_000
    var key: ES256PrivateKey!

    override func setUpWithError() throws {
        key = try ES256PrivateKey(pem: testSignInKeyPEM)
    }

    func testHeaderClaimsAndSignature() throws {
        let clock = ManualClock(start)
        let issuer = AppleClientSecretIssuer(
            key: key, keyID: "ABC123DEFG", teamID: "TEAM123456", lifetimeSeconds: 86_400,
            now: clock.now)
        let secret = try issuer.secret(clientID: "app.suplash.Suplash")
        let (header, claims) = try parts(secret)
        XCTAssertEqual(header, .object([("alg", "ES256"), ("kid", "ABC123DEFG")]))
        XCTAssertEqual(claims["iss"]?.stringValue, "TEAM123456")
        XCTAssertEqual(int(claims["iat"]), start)
        XCTAssertEqual(int(claims["exp"]), start + 86_400)
        XCTAssertEqual(claims["aud"]?.stringValue, "https://appleid.apple.com")
        XCTAssertEqual(claims["sub"]?.stringValue, "app.suplash.Suplash")
        // The signature (raw R ‖ S) verifies with the key's public half, and with no other key.
        let verified = try JWT.verifyES256(secret, keys: ["ABC123DEFG": key.publicKey], now: start)
        XCTAssertEqual(verified["sub"]?.stringValue, "app.suplash.Suplash")
        let signature = try XCTUnwrap(Base64URL.decode(String(secret.split(separator: ".")[2])))
        XCTAssertEqual(signature.count, 64)
        let other = try ES256PrivateKey(pem: otherKeyPEM)
        XCTAssertThrowsError(try JWT.verifyES256(secret, keys: ["ABC123DEFG": other.publicKey], now: start)) {
            XCTAssertEqual($0 as? JWTError, .badSignature)
        }
    }

    func testLifetimeNeverExceedsApplesLimit() throws {
        let start = self.start
        let issuer = AppleClientSecretIssuer(key: key, keyID: "K", teamID: "T", lifetimeSeconds: 400 * 86_400, now: { start })
        let claims = try parts(try issuer.secret(clientID: "c")).claims
        XCTAssertEqual(try XCTUnwrap(int(claims["exp"])) - (try XCTUnwrap(int(claims["iat"]))), 15_777_000)
        let short = AppleClientSecretIssuer(key: key, keyID: "K", teamID: "T", lifetimeSeconds: 1, now: { start })
        XCTAssertEqual(int(try parts(try short.secret(clientID: "c")).claims["exp"]), start + 300, "at least five minutes")
    }

    func testReusedUntilCloseToExpiryThenRenewed() throws {
        let clock = ManualClock(start)
        let issuer = AppleClientSecretIssuer(
            key: key, keyID: "K", teamID: "T", lifetimeSeconds: 86_400, renewalMarginSeconds: 3_600,
            now: clock.now)
        let first = try issuer.secret(clientID: "app.suplash.Suplash")
        clock.advance(86_400 - 3_601)
        XCTAssertEqual(try issuer.secret(clientID: "app.suplash.Suplash"), first, "more than the margin left: reused")
        clock.advance(1)
        let second = try issuer.secret(clientID: "app.suplash.Suplash")
        XCTAssertNotEqual(second, first, "the margin reached: renewed")
        XCTAssertEqual(int(try parts(second).claims["iat"]), start + 86_400 - 3_600)
        XCTAssertEqual(try issuer.secret(clientID: "app.suplash.Suplash"), second)
        // A clock that went back before the secret's iat gets a new one (Apple refuses future iat).
        clock.set(start)
        let third = try issuer.secret(clientID: "app.suplash.Suplash")
        XCTAssertEqual(int(try parts(third).claims["iat"]), start)
    }

    func testOneSecretPerClientIDAndDiscard() throws {
        let clock = ManualClock(start)
        let issuer = AppleClientSecretIssuer(key: key, keyID: "K", teamID: "T", now: clock.now)
        let app = try issuer.secret(clientID: "app.suplash.Suplash")
        let web = try issuer.secret(clientID: "app.suplash.web")
        XCTAssertEqual(try parts(web).claims["sub"]?.stringValue, "app.suplash.web")
        XCTAssertNotEqual(app, web)
        XCTAssertEqual(try issuer.secret(clientID: "app.suplash.Suplash"), app)
        issuer.discard(clientID: "app.suplash.Suplash")
        clock.advance(1)
        let renewed = try issuer.secret(clientID: "app.suplash.Suplash")
        XCTAssertNotEqual(renewed, app)
        XCTAssertEqual(try issuer.secret(clientID: "app.suplash.web"), web, "the other client id keeps its secret")
    }
}

final class AppleIDRequestTests: XCTestCase {
    func header(_ request: HTTPClientRequest, _ name: String) -> String? {
        request.headers.first { $0.name == name }?.value
    }

    func testFormEncoding() {
        XCTAssertEqual(
            String(decoding: FormURLEncoding.encode([("a", "b c"), ("x+y", "1&2=3"), ("t", "*-._~/é")]), as: UTF8.self),
            "a=b+c&x%2By=1%262%3D3&t=*-._%7E%2F%C3%A9")
        XCTAssertEqual(FormURLEncoding.encode([]), [])
        XCTAssertEqual(String(decoding: FormURLEncoding.encode([("empty", "")]), as: UTF8.self), "empty=")
    }

    func testTokenRequest() {
        let request = AppleIDRequestBuilder.tokenRequest(
            clientID: "app.suplash.Suplash", clientSecret: "eyJ.a.b",
            code: "c0de.with/odd+chars")
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.url, "https://appleid.apple.com/auth/token")
        XCTAssertEqual(header(request, "content-type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(header(request, "accept"), "application/json")
        XCTAssertEqual(
            String(decoding: request.body, as: UTF8.self),
            "client_id=app.suplash.Suplash&client_secret=eyJ.a.b&code=c0de.with%2Fodd%2Bchars&grant_type=authorization_code")
        let web = AppleIDRequestBuilder.tokenRequest(
            tokenURL: "https://127.0.0.1:9443/auth/token", clientID: "app.suplash.web",
            clientSecret: "s", code: "c", redirectURI: "https://suplash.app/apple/callback")
        XCTAssertEqual(web.url, "https://127.0.0.1:9443/auth/token")
        XCTAssertEqual(
            String(decoding: web.body, as: UTF8.self),
            "client_id=app.suplash.web&client_secret=s&code=c&grant_type=authorization_code"
                + "&redirect_uri=https%3A%2F%2Fsuplash.app%2Fapple%2Fcallback")
    }

    func testRevokeRequest() {
        let request = AppleIDRequestBuilder.revokeRequest(
            clientID: "app.suplash.Suplash", clientSecret: "eyJ.a.b",
            refreshToken: "r1a2b3.0.abc")
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.url, "https://appleid.apple.com/auth/revoke")
        XCTAssertEqual(header(request, "content-type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(
            String(decoding: request.body, as: UTF8.self),
            "client_id=app.suplash.Suplash&client_secret=eyJ.a.b&token=r1a2b3.0.abc&token_type_hint=refresh_token")
    }

    func testTokenResponseParsing() {
        let body = Array(#"{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r.1","id_token":"h.p.s"}"#.utf8)
        XCTAssertEqual(AppleTokenResponse(body: body), AppleTokenResponse(refreshToken: "r.1", idToken: "h.p.s"))
        XCTAssertEqual(
            AppleTokenResponse(body: Array(#"{"access_token":"a","id_token":"h.p.s"}"#.utf8)),
            AppleTokenResponse(refreshToken: nil, idToken: "h.p.s"))
        XCTAssertNil(AppleTokenResponse(body: Array(#"{"refresh_token":7}"#.utf8)))
        XCTAssertNil(AppleTokenResponse(body: Array(#"{"refresh_token":""}"#.utf8)))
        XCTAssertNil(AppleTokenResponse(body: Array(#"["refresh_token"]"#.utf8)))
        XCTAssertNil(AppleTokenResponse(body: Array("not json".utf8)))
    }

    func testIdTokenSubject() {
        func token(_ claims: String) -> String {
            "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(Array(claims.utf8)) + ".c2ln"
        }
        XCTAssertEqual(
            AppleTokenResponse(refreshToken: "r", idToken: token(#"{"iss":"https://appleid.apple.com","sub":"001.abc"}"#))
                .idTokenSubject, "001.abc")
        XCTAssertNil(AppleTokenResponse(refreshToken: "r", idToken: token(#"{"sub":7}"#)).idTokenSubject)
        XCTAssertNil(AppleTokenResponse(refreshToken: "r", idToken: token(#"["sub"]"#)).idTokenSubject)
        XCTAssertNil(AppleTokenResponse(refreshToken: "r", idToken: "mock").idTokenSubject)
        XCTAssertNil(AppleTokenResponse(refreshToken: "r", idToken: nil).idTokenSubject)
    }
}

final class AppleIDResponseClassifierTests: XCTestCase {
    func body(_ error: String) -> [UInt8] { Array(#"{"error":"\#(error)"}"#.utf8) }

    func testSuccess() {
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 200, body: []), .succeeded)
        let response = HTTPClientResponse(status: 200, headers: [], body: Array("{}".utf8), httpVersion: .http2)
        XCTAssertEqual(AppleIDResponseClassifier.decide(response), .succeeded)
    }

    func testInvalidGrantIsDone() {
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 400, body: body("invalid_grant")), .invalidGrant)
    }

    func testOurConfigurationPausesAndAlarms() {
        for code in ["invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope"] {
            XCTAssertEqual(
                AppleIDResponseClassifier.decide(status: 400, body: body(code)),
                .configurationError(AppleIDErrorCode(rawValue: code)!), code)
        }
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 401, body: []), .configurationError(.invalidClient))
        XCTAssertEqual(AppleIDResponseClassifier.decide(error: .http2NotNegotiated(.http1_1)), .configurationError(.connectionFailed))
        XCTAssertEqual(AppleIDResponseClassifier.decide(error: .invalidRequest), .configurationError(.connectionFailed))
    }

    func testServerTroubleRetriesWithBackoff() {
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 500, body: []), .retryLater(.other, retryAfterSeconds: nil))
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 503, body: [], retryAfter: "120"), .retryLater(.other, retryAfterSeconds: 120))
        let throttled = HTTPClientResponse(status: 429, headers: [HTTPClientHeader("retry-after", "30")], body: [], httpVersion: .http2)
        XCTAssertEqual(AppleIDResponseClassifier.decide(throttled), .retryLater(.other, retryAfterSeconds: 30))
        XCTAssertEqual(
            AppleIDResponseClassifier.decide(status: 429, body: [], retryAfter: "Wed, 21 Oct 2026 07:28:00 GMT"),
            .retryLater(.other, retryAfterSeconds: nil))
        for error in [HTTPClientError.couldNotConnect, .couldNotResolve, .tls, .timedOut, .connectionLost, .shutDown, .curl(code: 7)] {
            XCTAssertEqual(AppleIDResponseClassifier.decide(error: error), .retryLater(.connectionFailed, retryAfterSeconds: nil))
        }
    }

    func testOtherRefusalsAreGivenUp() {
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 400, body: body("invalid_request")), .rejected(.invalidRequest))
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 400, body: body("something_new")), .rejected(.other))
        XCTAssertEqual(AppleIDResponseClassifier.decide(status: 404, body: Array("<html>".utf8)), .rejected(.other))
        XCTAssertEqual(
            AppleIDResponseClassifier.decide(status: 400, body: body("connection_failed")), .rejected(.other),
            "our own marker is not read from a body")
        XCTAssertEqual(AppleIDResponseClassifier.decide(error: .responseTooLarge), .rejected(.other))
    }

    func testRetryPolicy() {
        let policy = AppleIDRetryPolicy(baseSeconds: 60, capSeconds: 3_600, maxAttempts: 5)
        XCTAssertEqual(policy.delaySeconds(afterAttempt: 1, unitRandom: 0.999_999), 60)
        XCTAssertEqual(policy.delaySeconds(afterAttempt: 1, unitRandom: 0), 30)
        XCTAssertEqual(policy.delaySeconds(afterAttempt: 2, unitRandom: 0.999_999), 120)
        XCTAssertEqual(policy.delaySeconds(afterAttempt: 4, unitRandom: 0.999_999), 480)
        XCTAssertNil(policy.delaySeconds(afterAttempt: 5, unitRandom: 0.5), "bounded attempts")
        XCTAssertEqual(policy.delaySeconds(afterAttempt: 1, retryAfterSeconds: 600, unitRandom: 0), 600, "Retry-After honoured")
        XCTAssertEqual(policy.delaySeconds(afterAttempt: 1, retryAfterSeconds: 86_400, unitRandom: 0), 3_600, "up to the cap")
        let long = AppleIDRetryPolicy(baseSeconds: 60, capSeconds: 3_600, maxAttempts: 100)
        XCTAssertEqual(long.delaySeconds(afterAttempt: 90, unitRandom: 0.999_999), 3_600, "no overflow far out")
    }
}

/// What a revoke job does after one attempt (`AppleRevokeStep`).
final class AppleRevokeStepTests: XCTestCase {
    let policy = AppleIDRetryPolicy(baseSeconds: 60, capSeconds: 21_600, maxAttempts: 3)

    func step(_ decision: AppleIDDecision, attempt: Int = 1) -> AppleRevokeStep {
        AppleRevokeStep.after(decision, attempt: attempt, policy: policy, unitRandom: 0)
    }

    func testRevokedOrAlreadyRevokedIsDone() {
        XCTAssertEqual(step(.succeeded), .done)
        XCTAssertEqual(step(.invalidGrant), .done)
    }

    func testConfigurationErrorsPauseWithoutUsingAnAttempt() {
        XCTAssertEqual(step(.configurationError(.invalidClient), attempt: 3), .pause(code: .invalidClient))
    }

    func testTemporaryFailuresBackOffThenGiveUp() {
        XCTAssertEqual(step(.retryLater(.other, retryAfterSeconds: nil), attempt: 1), .retry(delaySeconds: 30, code: .other))
        XCTAssertEqual(step(.retryLater(.other, retryAfterSeconds: nil), attempt: 2), .retry(delaySeconds: 60, code: .other))
        XCTAssertEqual(step(.retryLater(.other, retryAfterSeconds: 600), attempt: 2), .retry(delaySeconds: 600, code: .other))
        XCTAssertEqual(step(.retryLater(.connectionFailed, retryAfterSeconds: nil), attempt: 3), .giveUp(code: .connectionFailed))
    }

    func testOtherRefusalsGiveUpAtOnce() {
        XCTAssertEqual(step(.rejected(.invalidRequest)), .giveUp(code: .invalidRequest))
    }
}
