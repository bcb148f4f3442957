import SuplashSQL
import SuplashStoreCore
import XCTest

final class SQLTextTests: XCTestCase {
    func testOneTextIsRenderedForEachDialect() {
        let sql = SQLText("UPDATE sessions SET revoked_at = ?1, revoked_reason = 'a?1' WHERE id = ?2")
        XCTAssertEqual(sql.sqlite, "UPDATE sessions SET revoked_at = ?1, revoked_reason = 'a?1' WHERE id = ?2")
        XCTAssertEqual(sql.postgres, "UPDATE sessions SET revoked_at = $1, revoked_reason = 'a?1' WHERE id = $2")
        XCTAssertEqual(sql.text(for: .sqlite), sql.sqlite)
        XCTAssertEqual(sql.text(for: .postgres), sql.postgres)
    }

    func testATextBuiltPerDialectGetsEachEnginesClauseAndPlaceholders() {
        let sql = SQLText { "SELECT 1 FROM refresh_tokens t WHERE t.token_hash = ?1 \($0.forUpdate(of: ["t"]))" }
        XCTAssertEqual(sql.sqlite, "SELECT 1 FROM refresh_tokens t WHERE t.token_hash = ?1 ")
        XCTAssertEqual(sql.postgres, "SELECT 1 FROM refresh_tokens t WHERE t.token_hash = $1 FOR UPDATE OF t")
    }

    func testExecutorsSendTheirDialectsTextAndQueryOneTakesTheFirstRow() throws {
        let recorder = Recorder(dialect: .postgres, rows: [Row(id: "a"), Row(id: "b")])
        let sql = SQLText("SELECT id FROM sessions WHERE revoked_at >= ?1")
        XCTAssertEqual(try recorder.queryOne(sql, [.integer(1)])?["id"], .text("a"))
        XCTAssertEqual(try recorder.execute(sql, [.integer(2)]), 2)
        XCTAssertEqual(recorder.sent.map(\.0), [sql.postgres, sql.postgres])
        XCTAssertEqual(recorder.sent.map(\.1), [[.integer(1)], [.integer(2)]])
        let sqlite = Recorder(dialect: .sqlite, rows: [])
        XCTAssertNil(try sqlite.queryOne(sql, []))
        XCTAssertEqual(sqlite.sent.map(\.0), [sql.sqlite])
    }
}

private struct Row: SQLRowValues {
    let id: String
    subscript(_ index: Int) -> SQLValue { index == 0 ? .text(id) : .null }
    subscript(_ name: String) -> SQLValue { name == "id" ? .text(id) : .null }
}

/// An executor that records what it is sent (the statements' text per dialect).
private final class Recorder: SQLExecutor {
    let dialect: SQLDialect
    let rows: [Row]
    var sent: [(String, [SQLValue])] = []

    init(dialect: SQLDialect, rows: [Row]) {
        self.dialect = dialect
        self.rows = rows
    }

    func query(_ sql: String, _ args: [SQLValue]) throws -> [Row] {
        sent.append((sql, args))
        return rows
    }

    func execute(_ sql: String, _ args: [SQLValue]) throws -> Int {
        sent.append((sql, args))
        return rows.count
    }

    func pipeline(_ statements: [SQLStatement]) throws -> [[Row]] {
        try statements.map { try query($0.sql.text(for: dialect), $0.args) }
    }
}
