import SuplashDomain
import XCTest

/// Refresh-token rotation and reuse detection shared by the store adapters (spec §3).
final class RefreshTokenRulesTests: XCTestCase {
    func testVerdictOrder() {
        // (revoked, used, expiresAt, verdict, why) at now = 100
        let table: [(Bool, Bool, Int64, RefreshTokenRules.Verdict, String)] = [
            (true, true, 50, .revoked, "a revoked session answers revoked whatever the token"),
            (false, true, 50, .reused, "reuse revokes the family even after expiry"),
            (false, true, 500, .reused, "reuse of a live token"),
            (false, false, 100, .expired, "expired at the instant"),
            (false, false, 101, .rotate, "current"),
        ]
        for (revoked, used, expiresAt, expected, why) in table {
            XCTAssertEqual(RefreshTokenRules.verdict(sessionRevoked: revoked, tokenUsed: used, expiresAt: expiresAt, now: 100),
                           expected, why)
        }
    }
}
