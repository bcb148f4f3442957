import SuplashSQL
import XCTest

final class SQLDialectTests: XCTestCase {
    func testPlaceholdersAreNumberedPerEngine() {
        XCTAssertEqual(SQLDialect.sqlite.placeholder(1), "?1")
        XCTAssertEqual(SQLDialect.postgres.placeholder(12), "$12")
        XCTAssertEqual(SQLDialect.sqlite.placeholders(3), "?1, ?2, ?3")
        XCTAssertEqual(SQLDialect.postgres.placeholders(2, from: 4), "$4, $5")
        XCTAssertEqual(SQLDialect.postgres.placeholders(0), "")
    }

    func testRenderLeavesSQLiteTextUnchanged() {
        let sql = "SELECT a FROM t WHERE b = ?1 AND c = ?2 AND d = '?3'"
        XCTAssertEqual(SQLDialect.sqlite.render(sql), sql)
    }

    func testRenderTurnsNumberedPlaceholdersIntoDollarParameters() {
        XCTAssertEqual(
            SQLDialect.postgres.render("UPDATE t SET a = ?1, b = ?10 WHERE id = ?2 RETURNING version"),
            "UPDATE t SET a = $1, b = $10 WHERE id = $2 RETURNING version")
        XCTAssertEqual(SQLDialect.postgres.render("VALUES (?1,?2)"), "VALUES ($1,$2)")
    }

    func testRenderLeavesLiteralsIdentifiersCommentsAndOperatorsAlone() {
        let sql = """
            SELECT 'it''s ?1', "odd?2", data ? 'key', data ?| ?3 -- ?4 stays
            FROM t /* ?5 stays */ WHERE id = ?6
            """
        XCTAssertEqual(
            SQLDialect.postgres.render(sql),
            """
            SELECT 'it''s ?1', "odd?2", data ? 'key', data ?| $3 -- ?4 stays
            FROM t /* ?5 stays */ WHERE id = $6
            """)
    }

    func testRenderCopiesUnterminatedQuotesAndNonASCIIText() {
        XCTAssertEqual(SQLDialect.postgres.render("SELECT 'é ?1"), "SELECT 'é ?1")
        XCTAssertEqual(SQLDialect.postgres.render("SELECT ?1 /* ?2"), "SELECT $1 /* ?2")
        XCTAssertEqual(SQLDialect.postgres.render("SELECT 'ü' || ?1, ?"), "SELECT 'ü' || $1, ?")
        XCTAssertEqual(SQLDialect.postgres.render(""), "")
    }

    func testLockingClauseIsEmptyUnderTheSingleWriter() {
        XCTAssertEqual(SQLDialect.sqlite.forUpdate(), "")
        XCTAssertEqual(SQLDialect.sqlite.forUpdate(skipLocked: true), "")
        XCTAssertEqual(SQLDialect.postgres.forUpdate(), "FOR UPDATE")
        XCTAssertEqual(SQLDialect.postgres.forUpdate(skipLocked: true), "FOR UPDATE SKIP LOCKED")
        XCTAssertEqual(SQLDialect.postgres.forUpdate(of: ["t", "s"]), "FOR UPDATE OF t, s")
        XCTAssertEqual(SQLDialect.postgres.forUpdate(of: ["t"], skipLocked: true), "FOR UPDATE OF t SKIP LOCKED")
        XCTAssertEqual(SQLDialect.sqlite.forUpdate(of: ["t", "s"]), "")
    }

    func testColumnTypesAndTableOptions() {
        XCTAssertEqual(SQLDialect.sqlite.bytesType, "BLOB")
        XCTAssertEqual(SQLDialect.postgres.bytesType, "BYTEA")
        XCTAssertEqual(SQLDialect.sqlite.int64Type, "INTEGER")
        XCTAssertEqual(SQLDialect.postgres.int64Type, "BIGINT")
        XCTAssertEqual(SQLDialect.sqlite.withoutRowID, "WITHOUT ROWID")
        XCTAssertEqual(SQLDialect.postgres.withoutRowID, "")
    }

    func testInsertOrReplace() {
        let columns = ["user_id", "id", "amount_ml"]
        XCTAssertEqual(
            SQLDialect.sqlite.insertOrReplace(into: "entries", columns: columns, key: ["user_id", "id"]),
            "INSERT OR REPLACE INTO entries (user_id, id, amount_ml) VALUES (?1, ?2, ?3)")
        XCTAssertEqual(
            SQLDialect.postgres.insertOrReplace(into: "entries", columns: columns, key: ["user_id", "id"]),
            "INSERT INTO entries (user_id, id, amount_ml) VALUES ($1, $2, $3) "
                + "ON CONFLICT (user_id, id) DO UPDATE SET amount_ml = excluded.amount_ml")
        XCTAssertEqual(
            SQLDialect.postgres.insertOrReplace(into: "seen", columns: ["id"], key: ["id"]),
            "INSERT INTO seen (id) VALUES ($1) ON CONFLICT (id) DO NOTHING")
    }

    func testOneStatementTextServesBothEngines() {
        func lookup(_ dialect: SQLDialect) -> String {
            dialect.render("SELECT version FROM bills WHERE user_id = ?1 AND id = ?2 \(dialect.forUpdate())")
        }
        XCTAssertEqual(lookup(.sqlite), "SELECT version FROM bills WHERE user_id = ?1 AND id = ?2 ")
        XCTAssertEqual(lookup(.postgres), "SELECT version FROM bills WHERE user_id = $1 AND id = $2 FOR UPDATE")
    }
}
