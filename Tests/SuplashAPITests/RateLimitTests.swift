import Foundation
import SuplashDomain
import SuplashLogging
import XCTest

@testable import SuplashAPI

/// Shared buckets whose database is down.
private struct UnreachableBuckets: RateLimitBucketRepository {
    func takeRateLimitToken(bucket: [UInt8], capacity: Int, windowSeconds: Double) throws -> RateLimitTake {
        throw RepositoryError.unavailable
    }
    func returnRateLimitToken(bucket: [UInt8], capacity: Int) throws { throw RepositoryError.unavailable }
    func purgeRateLimitBuckets() throws -> Int { throw RepositoryError.unavailable }
}

/// Token buckets, trusted proxies and gzip (spec §7), unit-level.
final class RateLimitTests: XCTestCase {
    func testBucketAllowsLimitThenRefillsOverTheWindow() {
        let layer = RateLimitLayer(name: "t", limit: 3, window: 60)
        XCTAssertTrue(layer.take("a", now: 0).allowed)
        XCTAssertTrue(layer.take("a", now: 0).allowed)
        let third = layer.take("a", now: 0)
        XCTAssertTrue(third.allowed)
        XCTAssertEqual(third.remaining, 0)
        let limited = layer.take("a", now: 0)
        XCTAssertFalse(limited.allowed)
        XCTAssertEqual(limited.resetSeconds, 20, "one token every 20 s")
        XCTAssertTrue(layer.take("b", now: 0).allowed, "keys are independent")
        XCTAssertTrue(layer.take("a", now: 20).allowed)
        XCTAssertEqual(layer.policyHeader, "\"t\";q=3;w=60")
    }

    /// A limiter outage must not take the API down: the layer falls back to its in-memory
    /// bucket (still limiting per instance) instead of refusing or allowing everything.
    func testSharedBucketsFailOpenToTheLocalBucket() {
        let shared = SharedRateLimitBuckets(
            repository: UnreachableBuckets(), key: Array(repeating: 7, count: 32),
            logger: Logger(minimumLevel: .error))
        let layer = RateLimitLayer(name: "t", limit: 2, window: 60, shared: shared)
        XCTAssertTrue(layer.take("a", now: 0).allowed)
        XCTAssertTrue(layer.take("a", now: 0).allowed)
        XCTAssertFalse(layer.take("a", now: 0).allowed)
        layer.refund("a")
        XCTAssertTrue(layer.take("a", now: 0).allowed)
        // After the retry pause the database is tried again (and still fails over).
        XCTAssertTrue(layer.take("b", now: RateLimitLayer.sharedRetrySeconds + 1).allowed)
        XCTAssertTrue(RateLimits(shared: shared).isShared)
        XCTAssertFalse(RateLimits().isShared)
    }

    func testIdleBucketsAreEvicted() {
        let layer = RateLimitLayer(name: "t", limit: 1, window: 1, maxKeys: 64)
        for i in 0..<10_000 { _ = layer.take("k\(i)", now: Double(i)) }
        XCTAssertLessThanOrEqual(layer.trackedKeys, 64)
    }

    func testForwardedForCountsOnlyFromTrustedProxies() {
        let limits = RateLimits(trustedProxies: ["10.0.0.1"])
        XCTAssertEqual(limits.clientAddress(peer: "127.0.0.9", forwardedFor: "203.0.113.7"), "127.0.0.9")
        XCTAssertEqual(limits.clientAddress(peer: "10.0.0.1", forwardedFor: "198.51.100.1, 203.0.113.7"), "203.0.113.7")
        XCTAssertEqual(limits.clientAddress(peer: "10.0.0.1", forwardedFor: "203.0.113.7, 10.0.0.1"), "203.0.113.7")
        XCTAssertEqual(limits.clientAddress(peer: "10.0.0.1", forwardedFor: nil), "10.0.0.1")
    }

    func testGzipRoundTripsAndHonoursQZero() throws {
        XCTAssertTrue(ResponseCompression.acceptsGzip("gzip, deflate, br"))
        XCTAssertTrue(ResponseCompression.acceptsGzip("br;q=1.0, gzip;q=0.8"))
        XCTAssertFalse(ResponseCompression.acceptsGzip("gzip;q=0"))
        XCTAssertFalse(ResponseCompression.acceptsGzip("identity"))
        let body = Array(String(repeating: "{\"amountMl\":250}", count: 200).utf8)
        let compressed = try XCTUnwrap(ResponseCompression.gzip(body))
        XCTAssertLessThan(compressed.count, body.count / 4)
        XCTAssertEqual(Array(compressed.prefix(2)), [0x1f, 0x8b], "gzip magic")
    }
}

/// The per-user layer over HTTP.
final class PerUserLimitTests: XCTestCase {
    /// A request with an Idempotency-Key counts once against the per-user budget (the
    /// key's caller is identified without taking a token; the handler takes it).
    func testKeyedRequestsCountOnce() throws {
        let s = try TestServer(environment: ["SUPLASH_RATELIMIT_USER_PER_MINUTE": "4"])
        defer { s.stop() }
        let u = try s.signUp()
        let base = "/v1/water_logs/\(u.id)/entries"
        for i in 0..<4 {
            let r = try s.request(
                "POST", base, json: ["amountMl": 250, "loggedAt": "2026-01-15T10:30:00+03:00", "source": "phone"],
                token: u.token, headers: [("Idempotency-Key", "k\(i)")])
            XCTAssertEqual(r.status, 201, r.text)
        }
        let limited = try s.request(
            "POST", base, json: ["amountMl": 250, "loggedAt": "2026-01-15T10:30:00+03:00", "source": "phone"],
            token: u.token, headers: [("Idempotency-Key", "k4")])
        XCTAssertEqual(limited.status, 429, limited.text)
        XCTAssertNotNil(limited.header("Retry-After"))
        XCTAssertEqual(limited.header("RateLimit-Policy"), "\"user\";q=4;w=60", "the fifth, not the third, is limited")
        // A 429 is not stored: the same key runs again once the budget allows (here: still 429, not a replay).
        let again = try s.request(
            "POST", base, json: ["amountMl": 250, "loggedAt": "2026-01-15T10:30:00+03:00", "source": "phone"],
            token: u.token, headers: [("Idempotency-Key", "k4")])
        XCTAssertEqual(again.status, 429)
        XCTAssertNil(again.header("Idempotent-Replayed"))
    }
}
