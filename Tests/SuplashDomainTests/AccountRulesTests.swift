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
            XCTAssertEqual(
                RefreshTokenRules.verdict(sessionRevoked: revoked, tokenUsed: used, expiresAt: expiresAt, now: 100),
                expected, why)
        }
    }
}

/// Sign in with Apple linking rules shared by the store adapters (spec §3).
final class AppleSignInRulesTests: XCTestCase {
    func profile(verified: Bool) -> UserProfile {
        var p = UserProfile(id: "u1", email: "a@example.com", displayName: nil, now: 10)
        p.emailVerified = verified
        p.version = 3
        return p
    }

    func testAnEmailAppleDoesNotVouchForIsTaken() {
        XCTAssertThrowsError(try AppleSignInRules.link(profile(verified: true), appleVerifiedEmail: false, now: 50)) {
            XCTAssertEqual($0 as? RepositoryError, .emailTaken)
        }
    }

    func testLinkingAVerifiedAccountKeepsItAsItIs() throws {
        let (user, takeover) = try AppleSignInRules.link(profile(verified: true), appleVerifiedEmail: true, now: 50)
        XCTAssertFalse(takeover)
        XCTAssertEqual(user, profile(verified: true))
    }

    func testLinkingAnUnverifiedAccountIsATakeover() throws {
        let (user, takeover) = try AppleSignInRules.link(profile(verified: false), appleVerifiedEmail: true, now: 50)
        XCTAssertTrue(takeover)
        XCTAssertTrue(user.emailVerified)
        XCTAssertEqual(user.version, 4)
        XCTAssertEqual(user.updatedAt, 50)
    }

    func testNewUserCarriesApplesEmailAndVerification() {
        let p = AppleSignInRules.newUser(profile(verified: true), email: "x@privaterelay.appleid.com", emailVerified: false)
        XCTAssertEqual(p.email, "x@privaterelay.appleid.com")
        XCTAssertFalse(p.emailVerified)
    }
}
