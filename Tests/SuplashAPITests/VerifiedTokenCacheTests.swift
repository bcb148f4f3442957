import XCTest

@testable import SuplashAPI

/// The verified-token cache must never accept what full verification would refuse.
final class VerifiedTokenCacheTests: XCTestCase {
    let service = TokenService(secret: Array("0123456789abcdef0123456789abcdef-secret".utf8), accessTokenTTL: 3600)
    let now: Int64 = 1_790_000_000_000  // ms

    private func verified(_ token: String, at now: Int64) -> (userID: String, sessionID: String, issuedAt: Int64)? {
        try? service.verifyAccessTokenIssuedAt(token, now: now)
    }

    func testRepeatedVerificationGivesTheSameClaimsFromTheCache() throws {
        let token = service.accessToken(userID: "u-1", sessionID: "s-1", now: now)
        let first = try XCTUnwrap(verified(token, at: now))
        XCTAssertEqual(service.verifiedTokens.count, 1)
        let second = try XCTUnwrap(verified(token, at: now + 1000))
        XCTAssertEqual(first.userID, "u-1")
        XCTAssertEqual(first.sessionID, "s-1")
        XCTAssertEqual(first.issuedAt, now / 1000)
        XCTAssertEqual(second.userID, first.userID)
        XCTAssertEqual(second.sessionID, first.sessionID)
        XCTAssertEqual(second.issuedAt, first.issuedAt)
        XCTAssertEqual(service.verifiedTokens.count, 1)
    }

    func testACachedTokenStillExpires() {
        let token = service.accessToken(userID: "u-1", sessionID: "s-1", now: now)
        XCTAssertNotNil(verified(token, at: now))
        // Inside the 30 s leeway after `exp` it is still accepted, past it refused — as without a cache.
        XCTAssertNotNil(verified(token, at: now + 3600 * 1000 + 29_000))
        XCTAssertNil(verified(token, at: now + 3600 * 1000 + 31_000))
    }

    func testACachedTokenIsNotValidBeforeItWasIssued() {
        let token = service.accessToken(userID: "u-1", sessionID: "s-1", now: now)
        XCTAssertNotNil(verified(token, at: now))
        XCTAssertNil(verified(token, at: now - 120_000))
    }

    func testAnyChangedByteIsVerifiedAfreshAndRefused() {
        let token = service.accessToken(userID: "u-1", sessionID: "s-1", now: now)
        XCTAssertNotNil(verified(token, at: now))
        var bytes = Array(token.utf8)
        for index in [0, bytes.count / 2, bytes.count - 2] {
            let original = bytes[index]
            bytes[index] = original == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            XCTAssertNil(verified(String(decoding: bytes, as: UTF8.self), at: now), "byte \(index)")
            bytes[index] = original
        }
        XCTAssertNil(verified(token + "x", at: now))
        let other = TokenService(secret: Array("another-secret-another-secret-another".utf8))
        XCTAssertNil(try? other.verifyAccessTokenIssuedAt(token, now: now))
    }

    func testTokensSharingTheirLastBytesAreDistinctEntries() throws {
        // The key hashes only a token's tail: equality must still compare every byte.
        let cache = VerifiedTokenCache(capacity: 8)
        let tail = String(repeating: "s", count: 60)
        cache.store("a." + tail, .init(userID: "u-a", sessionID: "s", issuedAt: 0, expiresAt: 100, notBefore: nil))
        cache.store("b." + tail, .init(userID: "u-b", sessionID: "s", issuedAt: 0, expiresAt: 100, notBefore: nil))
        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(cache.claims(for: "a." + tail, now: 10, leeway: 0)?.userID, "u-a")
        XCTAssertEqual(cache.claims(for: "b." + tail, now: 10, leeway: 0)?.userID, "u-b")
        XCTAssertNil(cache.claims(for: "c." + tail, now: 10, leeway: 0))
        XCTAssertNil(cache.claims(for: tail, now: 10, leeway: 0))
    }

    func testTheCacheIsBounded() {
        let cache = VerifiedTokenCache(capacity: 4)
        for i in 0..<10 {
            cache.store("token-\(i)", .init(userID: "u", sessionID: "s", issuedAt: 0, expiresAt: 100, notBefore: nil))
            XCTAssertLessThanOrEqual(cache.count, 4)
        }
        XCTAssertNotNil(cache.claims(for: "token-9", now: 50, leeway: 30))
        XCTAssertNil(cache.claims(for: "token-9", now: 131, leeway: 30))
        XCTAssertNil(cache.claims(for: "unknown", now: 50, leeway: 30))
    }
}

final class BearerTokenParsingTests: XCTestCase {
    func testBearerCredentials() {
        XCTAssertEqual(Authenticator.bearerToken("Bearer abc.def.ghi"), "abc.def.ghi")
        XCTAssertEqual(Authenticator.bearerToken("bearer abc"), "abc")
        XCTAssertEqual(Authenticator.bearerToken("BEARER abc"), "abc")
        XCTAssertEqual(Authenticator.bearerToken("Bearer   abc \t"), "abc")
        XCTAssertEqual(Authenticator.bearerToken("Bearer a b"), "a b")
        XCTAssertNil(Authenticator.bearerToken("Bearer"))
        XCTAssertNil(Authenticator.bearerToken("Bearer "))
        XCTAssertNil(Authenticator.bearerToken("Bearer \t "))
        XCTAssertNil(Authenticator.bearerToken("Basic abc"))
        XCTAssertNil(Authenticator.bearerToken("Bearerx abc"))
        XCTAssertNil(Authenticator.bearerToken("Bear abc"))
        XCTAssertNil(Authenticator.bearerToken("Bearer\tabc"))
        XCTAssertNil(Authenticator.bearerToken("Béarer abc"))
        XCTAssertEqual(Authenticator.bearerToken("Bearer tökén"), "tökén")
    }
}
