import SuplashSQL
import SuplashStoreCore
import XCTest

/// The outbox claim is one statement over a table name, so a second outbox claims its rows the
/// same way: `FOR UPDATE SKIP LOCKED` on PostgreSQL only.
final class OutboxClaimTests: XCTestCase {
    func testTheClaimOfAnyOutboxTableSkipsLockedRowsOnPostgreSQLOnly() {
        let claim = OutboxClaim(table: "push_outbox", returning: ["id", "created_at", "device"])
        for text in [claim.statement.sqlite, claim.statement.postgres] {
            XCTAssertTrue(text.hasPrefix("UPDATE push_outbox SET next_attempt_at = "), text)
            XCTAssertTrue(text.contains("SELECT id FROM push_outbox\n"), text)
            XCTAssertTrue(text.hasSuffix("RETURNING id, created_at, device"), text)
        }
        XCTAssertFalse(claim.statement.sqlite.contains("FOR UPDATE"))
        XCTAssertTrue(claim.statement.sqlite.contains("next_attempt_at <= ?1"))
        XCTAssertTrue(claim.statement.postgres.contains("LIMIT $3\n    FOR UPDATE SKIP LOCKED)"), claim.statement.postgres)
        XCTAssertTrue(claim.statement.postgres.contains("SET next_attempt_at = $2"))
    }
}
