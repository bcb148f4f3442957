import Foundation
import SuplashCrypto
import SuplashHTTPClient
import SuplashJSON
import Synchronization
import XCTest

@testable import SuplashAPNs

/// A test-only P-256 key (PKCS#8 PEM, the `.p8` layout).
let testProviderKeyPEM = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5K94E6L+qgPkE9kQ
    o1bCFv98KNXK2ujBmmTszoQXvoWhRANCAARV9tSlq395rpTd5pmyREXjmTkKmE72
    Ely7H8mCkMtdeNxDh96N3Fbm8/Qy4QOMxO80NTGOJiSLMlp06b0a96ex
    -----END PRIVATE KEY-----
    """

/// A clock the test moves by hand (Unix seconds).
final class ManualClock: Sendable {
    private let value: Mutex<Int64>
    init(_ start: Int64) { value = Mutex(start) }
    func now() -> Int64 { value.withLock { $0 } }
    func advance(_ seconds: Int64) { value.withLock { $0 += seconds } }
}

final class APNsRequestBuilderTests: XCTestCase {
    let token = String(repeating: "ab", count: 32)

    func push(_ type: APNsPushType, expiration: Int64? = nil, collapseID: String? = nil) -> APNsPush {
        APNsPush(
            id: UUID(uuidString: "6F1C2B9E-0A4D-4C2E-9B3F-1D2E3F4A5B6C")!, deviceToken: token.uppercased(), pushType: type,
            bundleID: "app.suplash.Suplash", environment: .production, payload: Array(#"{"aps":{}}"#.utf8),
            expiration: expiration, collapseID: collapseID)
    }

    func header(_ request: HTTPClientRequest, _ name: String) -> String? {
        request.headers.first { $0.name == name }?.value
    }

    func testHeadersPerPushType() throws {
        let expected: [(APNsPushType, String, String)] = [
            (.alert, "app.suplash.Suplash", "10"),
            (.background, "app.suplash.Suplash", "5"),
            (.complication, "app.suplash.Suplash.complication", "10"),
            (.widgets, "app.suplash.Suplash.push-type.widgets", "5"),
        ]
        for (type, topic, priority) in expected {
            let request = try APNsRequestBuilder.request(for: push(type), origin: "https://api.push.apple.com", providerToken: "jwt")
            XCTAssertEqual(request.method, "POST")
            XCTAssertEqual(request.url, "https://api.push.apple.com/3/device/" + token, "hex token in lower case")
            XCTAssertEqual(header(request, "apns-push-type"), type.rawValue)
            XCTAssertEqual(header(request, "apns-topic"), topic)
            XCTAssertEqual(header(request, "apns-priority"), priority)
            XCTAssertEqual(header(request, "apns-id"), "6f1c2b9e-0a4d-4c2e-9b3f-1d2e3f4a5b6c")
            XCTAssertEqual(header(request, "authorization"), "bearer jwt")
            XCTAssertNil(header(request, "apns-expiration"))
            XCTAssertNil(header(request, "apns-collapse-id"))
            XCTAssertEqual(request.body, Array(#"{"aps":{}}"#.utf8))
        }
    }

    func testExpirationAndCollapseID() throws {
        let request = try APNsRequestBuilder.request(
            for: push(.background, expiration: 1_800_000_000, collapseID: "sync"),
            origin: "https://x", providerToken: "jwt")
        XCTAssertEqual(header(request, "apns-expiration"), "1800000000")
        XCTAssertEqual(header(request, "apns-collapse-id"), "sync")
        let once = try APNsRequestBuilder.request(for: push(.alert, expiration: 0), origin: "https://x", providerToken: "jwt")
        XCTAssertEqual(header(once, "apns-expiration"), "0")
    }

    func testRefusals() {
        var p = push(.alert)
        p.deviceToken = "abc"  // odd, short
        XCTAssertThrowsError(try APNsRequestBuilder.request(for: p, origin: "https://x", providerToken: "t")) {
            XCTAssertEqual($0 as? APNsRequestError, .invalidDeviceToken)
        }
        p.deviceToken = String(repeating: "zz", count: 32)
        XCTAssertThrowsError(try APNsRequestBuilder.request(for: p, origin: "https://x", providerToken: "t")) {
            XCTAssertEqual($0 as? APNsRequestError, .invalidDeviceToken)
        }
        p = push(.alert)
        p.payload = [UInt8](repeating: 0x20, count: 4097)
        XCTAssertThrowsError(try APNsRequestBuilder.request(for: p, origin: "https://x", providerToken: "t")) {
            XCTAssertEqual($0 as? APNsRequestError, .payloadTooLarge)
        }
        p.payload = [UInt8](repeating: 0x20, count: 4096)
        XCTAssertNoThrow(try APNsRequestBuilder.request(for: p, origin: "https://x", providerToken: "t"))
        XCTAssertThrowsError(
            try APNsRequestBuilder.request(
                for: push(.alert, collapseID: String(repeating: "c", count: 65)),
                origin: "https://x", providerToken: "t")
        ) {
            XCTAssertEqual($0 as? APNsRequestError, .invalidCollapseID)
        }
        p = push(.alert)
        p.bundleID = "app/../x"
        XCTAssertThrowsError(try APNsRequestBuilder.request(for: p, origin: "https://x", providerToken: "t")) {
            XCTAssertEqual($0 as? APNsRequestError, .invalidBundleID)
        }
    }
}

final class APNsProviderTokenTests: XCTestCase {
    func claims(_ token: String, key: ES256PrivateKey) throws -> (header: JSONValue, claims: JSONValue) {
        let parts = token.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        let signature = try XCTUnwrap(Base64URL.decode(parts[2]))
        XCTAssertTrue(key.publicKey.verify(signature: signature, message: Array((parts[0] + "." + parts[1]).utf8)))
        return (
            try JSONParser.parse(try XCTUnwrap(Base64URL.decode(parts[0]))),
            try JSONParser.parse(try XCTUnwrap(Base64URL.decode(parts[1])))
        )
    }

    func testTokenHasKidIssIatAndIsReusedUntilRefreshAge() throws {
        let key = try ES256PrivateKey(pem: testProviderKeyPEM)
        let clock = ManualClock(1_800_000_000)
        let source = APNsProviderToken(key: key, keyID: "KEYID12345", teamID: "TEAMID1234", now: { clock.now() })
        let first = try source.current()
        let (header, body) = try claims(first, key: key)
        XCTAssertEqual(header.serializedString(), #"{"alg":"ES256","kid":"KEYID12345"}"#)
        XCTAssertEqual(body.serializedString(), #"{"iss":"TEAMID1234","iat":1800000000}"#)
        clock.advance(39 * 60 + 59)
        XCTAssertEqual(try source.current(), first, "reused for 40 minutes")
        clock.advance(1)
        let second = try source.current()
        XCTAssertNotEqual(second, first)
        XCTAssertEqual(try claims(second, key: key).claims["iat"]?.int64Value, 1_800_002_400)
        XCTAssertEqual(source.issuedAt, 1_800_002_400)
        // A clock that goes backwards keeps the token.
        clock.advance(-3600)
        XCTAssertEqual(try source.current(), second)
    }

    func testRefreshAgeIsClampedTo20To50Minutes() throws {
        let key = try ES256PrivateKey(pem: testProviderKeyPEM)
        let clock = ManualClock(1_800_000_000)
        let eager = APNsProviderToken(key: key, keyID: "K", teamID: "T", refreshAfterSeconds: 60, now: { clock.now() })
        let first = try eager.current()
        clock.advance(19 * 60 + 59)
        XCTAssertEqual(try eager.current(), first, "never sooner than 20 minutes")
        clock.advance(1)
        XCTAssertNotEqual(try eager.current(), first)

        let lazy = APNsProviderToken(key: key, keyID: "K", teamID: "T", refreshAfterSeconds: 7200, now: { clock.now() })
        let token = try lazy.current()
        clock.advance(50 * 60)
        XCTAssertNotEqual(try lazy.current(), token, "never older than 50 minutes")
    }

    func testForcedRefreshKeepsTheTwentyMinuteRule() throws {
        let key = try ES256PrivateKey(pem: testProviderKeyPEM)
        let clock = ManualClock(1_800_000_000)
        let source = APNsProviderToken(key: key, keyID: "K", teamID: "T", now: { clock.now() })
        let first = try source.current()
        clock.advance(19 * 60)
        XCTAssertFalse(try source.refresh(rejected: first), "19 minutes: refused (Apple would answer TooManyProviderTokenUpdates)")
        XCTAssertEqual(try source.current(), first)
        clock.advance(60)
        XCTAssertTrue(try source.refresh(rejected: first))
        let second = try source.current()
        XCTAssertNotEqual(second, first)
        // A caller still holding the old token learns a newer one exists; nothing is re-signed.
        XCTAssertTrue(try source.refresh(rejected: first))
        XCTAssertEqual(try source.current(), second)
    }
}

final class APNsResponseClassifierTests: XCTestCase {
    func decide(
        _ status: Int, _ reason: APNsReason, unregisteredAt: Int64? = nil, registeredAt: Int64? = nil,
        other: Bool = false
    ) -> APNsDecision {
        APNsResponseClassifier.decide(
            status: status, reason: reason, unregisteredAt: unregisteredAt,
            registeredAt: registeredAt, triedOtherEnvironment: other)
    }

    func testEveryPath() {
        XCTAssertEqual(decide(200, .other), .sent)
        XCTAssertEqual(decide(400, .badDeviceToken), .retryInOtherEnvironment)
        XCTAssertEqual(decide(400, .badDeviceToken, other: true), .dropToken(.badDeviceToken))
        XCTAssertEqual(decide(410, .unregistered, unregisteredAt: 2000, registeredAt: 1000), .dropToken(.unregistered))
        XCTAssertEqual(decide(410, .unregistered, unregisteredAt: nil, registeredAt: 1000), .dropToken(.unregistered))
        XCTAssertEqual(
            decide(410, .unregistered, unregisteredAt: 1000, registeredAt: 2000), .rejected(.unregistered),
            "registered again after Apple's timestamp: keep the token")
        XCTAssertEqual(decide(403, .expiredProviderToken), .refreshProviderTokenAndRetry)
        for reason: APNsReason in [
            .invalidProviderToken, .badTopic, .topicDisallowed, .deviceTokenNotForTopic,
            .badCertificateEnvironment, .missingProviderToken,
        ] {
            let status = [.invalidProviderToken, .missingProviderToken].contains(reason) ? 403 : 400
            XCTAssertEqual(decide(status, reason), .configurationError(reason), reason.rawValue)
        }
        XCTAssertEqual(decide(429, .tooManyRequests), .retryLater(.tooManyRequests))
        XCTAssertEqual(decide(429, .tooManyProviderTokenUpdates), .retryLater(.tooManyProviderTokenUpdates))
        XCTAssertEqual(decide(500, .internalServerError), .retryLater(.internalServerError))
        XCTAssertEqual(decide(503, .serviceUnavailable), .retryLater(.serviceUnavailable))
        XCTAssertEqual(decide(502, .other), .retryLater(.internalServerError))
        XCTAssertEqual(decide(413, .payloadTooLarge), .rejected(.payloadTooLarge))
        XCTAssertEqual(decide(400, .badCollapseId), .rejected(.badCollapseId))
        XCTAssertEqual(decide(400, .other), .rejected(.other))
        XCTAssertEqual(APNsResponseClassifier.decide(error: .connectionLost), .retryLater(.connectionFailed))
        XCTAssertEqual(APNsResponseClassifier.decide(error: .timedOut), .retryLater(.connectionFailed))
        XCTAssertEqual(APNsResponseClassifier.decide(error: .http2NotNegotiated(.http1_1)), .configurationError(.connectionFailed))
    }

    func testReasonFromBody() {
        XCTAssertEqual(APNsReason(body: Array(#"{"reason":"BadDeviceToken"}"#.utf8)), .badDeviceToken)
        XCTAssertEqual(APNsReason(body: Array(#"{"reason":"Unregistered","timestamp":1}"#.utf8)), .unregistered)
        XCTAssertEqual(APNsReason(body: Array(#"{"reason":"SomethingNew"}"#.utf8)), .other)
        XCTAssertEqual(APNsReason(body: []), .other)
    }

    func testBackoffGrowsIsCappedAndJittered() {
        let backoff = APNsBackoff(base: .seconds(1), cap: .seconds(60))
        XCTAssertEqual(backoff.delay(afterAttempt: 1, unitRandom: 0), .milliseconds(500))
        XCTAssertEqual(backoff.delay(afterAttempt: 1, unitRandom: 1), .seconds(1))
        XCTAssertEqual(backoff.delay(afterAttempt: 3, unitRandom: 1), .seconds(4))
        XCTAssertEqual(backoff.delay(afterAttempt: 3, unitRandom: 0.5), .seconds(3))
        XCTAssertEqual(backoff.delay(afterAttempt: 7, unitRandom: 1), .seconds(60), "capped")
        XCTAssertEqual(backoff.delay(afterAttempt: 200, unitRandom: 0), .seconds(30), "capped, no overflow")
    }
}
