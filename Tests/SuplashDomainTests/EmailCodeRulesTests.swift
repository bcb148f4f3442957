import SuplashDomain
import XCTest

/// Emailed-code rules shared by the store adapters (spec §3, docs/decisions.md "Email codes").
final class EmailCodeRulesTests: XCTestCase {
    func testResendWaitsForTheMinimumInterval() {
        XCTAssertNil(EmailCodeRules.resendWait(previousCreatedAt: nil, minIntervalMs: 60_000, now: 5))
        XCTAssertEqual(EmailCodeRules.resendWait(previousCreatedAt: 1_000, minIntervalMs: 60_000, now: 1_000), 60_000)
        XCTAssertEqual(EmailCodeRules.resendWait(previousCreatedAt: 1_000, minIntervalMs: 60_000, now: 60_999), 1)
        XCTAssertNil(EmailCodeRules.resendWait(previousCreatedAt: 1_000, minIntervalMs: 60_000, now: 61_000))
    }

    func testVerdictOrderExpiryThenAttemptsThenMatch() {
        // (expiresAt, attempts, matches, verdict, why)
        let table: [(Int64, Int, Bool, EmailCodeRules.Verdict, String)] = [
            (100, 0, true, .expired, "expired at its expiry instant, even when it matches"),
            (101, 5, true, .attemptsExhausted, "no attempts left, even when it matches"),
            (101, 0, false, .wrong(attemptsLeft: 4), "first miss"),
            (101, 4, false, .wrong(attemptsLeft: 0), "last miss: the code is deleted"),
            (101, 4, true, .redeem, "a match on the last attempt"),
        ]
        for (expiresAt, attempts, match, expected, why) in table {
            XCTAssertEqual(
                EmailCodeRules.verdict(
                    expiresAt: expiresAt, attempts: attempts, now: 100, maxAttempts: 5,
                    matches: { match }), expected, why)
        }
    }

    func testTheHashIsComparedOnlyForALiveCodeWithAttemptsLeft() {
        var asked = 0
        _ = EmailCodeRules.verdict(expiresAt: 1, attempts: 0, now: 100, maxAttempts: 5) {
            asked += 1
            return true
        }
        _ = EmailCodeRules.verdict(expiresAt: 200, attempts: 5, now: 100, maxAttempts: 5) {
            asked += 1
            return true
        }
        XCTAssertEqual(asked, 0)
        _ = EmailCodeRules.verdict(expiresAt: 200, attempts: 1, now: 100, maxAttempts: 5) {
            asked += 1
            return true
        }
        XCTAssertEqual(asked, 1)
    }
}
