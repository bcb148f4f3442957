import SuplashSQL
import XCTest

final class SQLValueTests: XCTestCase {
    private struct Row: SQLRowValues {
        let names: [String]
        let values: [SQLValue]
        subscript(_ index: Int) -> SQLValue { values[index] }
        subscript(_ name: String) -> SQLValue { names.firstIndex(of: name).map { values[$0] } ?? .null }
    }

    func testAccessorsReadTheTypeAModelFieldWants() {
        XCTAssertEqual(SQLValue.integer(7).int64, 7)
        XCTAssertEqual(SQLValue.real(3).int64, 3)
        XCTAssertNil(SQLValue.real(3.5).int64)
        XCTAssertEqual(SQLValue.integer(2).double, 2)
        XCTAssertEqual(SQLValue.real(2.5).double, 2.5)
        XCTAssertEqual(SQLValue.text("a").text, "a")
        XCTAssertNil(SQLValue.integer(1).text)
        XCTAssertEqual(SQLValue.blob([1, 2]).bytes, [1, 2])
        XCTAssertNil(SQLValue.null.int64)
        XCTAssertNil(SQLValue.null.bytes)
    }

    func testLiteralsAndOptionalHelpers() {
        let values: [SQLValue] = [42, 2.5, "x", nil, true]
        XCTAssertEqual(values, [.integer(42), .real(2.5), .text("x"), .null, .integer(1)])
        XCTAssertEqual(SQLValue.optionalText(nil), .null)
        XCTAssertEqual(SQLValue.optionalInteger(5), .integer(5))
        XCTAssertTrue(SQLValue.optionalReal(nil).isNull)
    }

    func testRowsAreReadByNameOrIndexWithNullForAnUnknownColumn() {
        let row = Row(names: ["id", "amount_ml"], values: ["e1", 250])
        XCTAssertEqual(row["amount_ml"].int64, 250)
        XCTAssertEqual(row[0].text, "e1")
        XCTAssertEqual(row["missing"], .null)
    }
}
