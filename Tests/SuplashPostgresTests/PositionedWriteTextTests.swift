import XCTest

@testable import SuplashPostgresStore

/// The text of a positioned write: the store transaction turns the statement's last
/// parameter (`$(n+1)`) into the driver's position token, and nothing else.
final class PositionedWriteTextTests: XCTestCase {
    func replaced(_ n: Int, _ sql: String) -> String {
        PostgresStoreTransaction.replacingParameter(n, in: sql, with: "P")
    }

    func testOnlyTheNumberedParameterIsReplaced() {
        XCTAssertEqual(replaced(10, "VALUES ($1, $2, $10)"), "VALUES ($1, $2, P)")
        XCTAssertEqual(replaced(1, "$1 $10 $100 $1"), "P $10 $100 P")
        XCTAssertEqual(replaced(10, "$10$10 $1$10"), "PP $1P")
        XCTAssertEqual(replaced(12, "x = $12"), "x = P")
        XCTAssertEqual(replaced(1, "$01"), "P")
        XCTAssertEqual(replaced(1, "$" + String(repeating: "0", count: 30) + "1"), "P")
    }

    func testOtherDollarsAndTextAreKept() {
        XCTAssertEqual(replaced(3, "$ $x $$3$"), "$ $x $P$")
        XCTAssertEqual(replaced(2, "é $2 ü — $20"), "é P ü — $20")
        XCTAssertEqual(replaced(1, "$1" + String(repeating: "0", count: 30)), "$1" + String(repeating: "0", count: 30))
        XCTAssertEqual(replaced(4, ""), "")
    }
}
