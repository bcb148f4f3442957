import SuplashSQL
import XCTest

@testable import SuplashStorage

final class SQLiteConnectionTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var connection: SQLiteConnection!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        connection = try SQLiteConnection(path: directory.file("db.sqlite"), role: .writer)
    }

    override func tearDown() {
        connection?.close()
        connection = nil
        directory = nil
    }

    func testCRUD() throws {
        try connection.execute(
            """
            CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount REAL);
            CREATE INDEX t_name ON t(name);
            """)
        XCTAssertEqual(try connection.run("INSERT INTO t(name, amount) VALUES (?, ?)", ["a", 1.5]), 1)
        XCTAssertEqual(connection.lastInsertRowID, 1)
        try connection.run("INSERT INTO t(name, amount) VALUES (?, ?)", ["b", nil])
        XCTAssertEqual(connection.lastInsertRowID, 2)

        let rows = try connection.query("SELECT id, name, amount FROM t ORDER BY id")
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(try rows[0].int64("id"), 1)
        XCTAssertEqual(try rows[0].string(1), "a")
        XCTAssertEqual(try rows[0].double("amount"), 1.5)
        XCTAssertTrue(try rows[1].isNull("amount"))
        XCTAssertNil(try rows[1].optionalDouble("amount"))
        XCTAssertEqual(rows[1]["name"], .text("b"))
        XCTAssertEqual(rows[1][0], .integer(2))
        XCTAssertEqual(rows[0].columns.names, ["id", "name", "amount"])

        XCTAssertEqual(try connection.run("UPDATE t SET amount = ? WHERE id = ?", [3.0, 2]), 1)
        XCTAssertEqual(try connection.queryOne("SELECT amount FROM t WHERE id = ?", [2])?.double(0), 3.0)
        XCTAssertEqual(try connection.run("DELETE FROM t"), 2)
        XCTAssertNil(try connection.queryOne("SELECT * FROM t"))
        XCTAssertEqual(try connection.scalarInt64("SELECT count(*) FROM t"), 0)
        XCTAssertNil(try connection.scalar("SELECT 1 WHERE 0"))
    }

    func testBindsAndReadsEveryValueType() throws {
        try connection.execute("CREATE TABLE v (k INTEGER PRIMARY KEY, x)")  // no affinity: values kept as bound
        let values: [SQLValue] = [
            .null, .integer(0), .integer(Int64.max), .integer(Int64.min), .real(-2.5), .real(1e300),
            .text(""), .text("héllo 💧"), .text("nul\u{0}inside"), .blob([]), .blob([0, 1, 2, 255]),
        ]
        for (i, value) in values.enumerated() {
            try connection.run("INSERT INTO v(k, x) VALUES (?, ?)", [.int(i), value])
        }
        let rows = try connection.query("SELECT x, typeof(x) FROM v ORDER BY k")
        XCTAssertEqual(rows.map { $0[0] }, values)
        XCTAssertEqual(
            try rows.map { try $0.string(1) },
            ["null", "integer", "integer", "integer", "real", "real", "text", "text", "text", "blob", "blob"])
        XCTAssertEqual(try rows[10].blob(0), [0, 1, 2, 255])
        XCTAssertEqual(try rows[7].string("x"), "héllo 💧")
        XCTAssertEqual(try connection.scalarInt64("SELECT length(x) FROM v WHERE k = 8"), 3)  // length() stops at NUL
        XCTAssertEqual(try connection.scalarInt64("SELECT length(CAST(x AS BLOB)) FROM v WHERE k = 8"), 10)
        XCTAssertEqual(try connection.scalar("SELECT ?", [true]), .integer(1))
    }

    func testTypedAccessorErrors() throws {
        let row = try XCTUnwrap(try connection.queryOne("SELECT 1 AS a, 'x' AS b, NULL AS c"))
        assertStorageError(.typeMismatch) { try row.string("a") }
        assertStorageError(.typeMismatch) { try row.int64("b") }
        assertStorageError(.typeMismatch) { try row.int64("c") }
        assertStorageError(.misuse) { try row.int64("nope") }
        assertStorageError(.misuse) { try row.int64(7) }
        XCTAssertEqual(row["nope"], .null)
    }

    func testStatementCacheReusesPreparedStatements() throws {
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER)")
        let before = connection.statementsPrepared
        let cachedBefore = connection.cachedStatementCount
        for i in 0..<50 {
            try connection.run("INSERT INTO t(n) VALUES (?)", [.int(i)])
            XCTAssertEqual(try connection.scalarInt64("SELECT count(*) FROM t WHERE n <= ?", [.int(i)]), Int64(i + 1))
        }
        XCTAssertEqual(connection.statementsPrepared - before, 2)
        XCTAssertEqual(connection.cachedStatementCount - cachedBefore, 2)
        // Reuse after an error resets the statement and its bindings.
        assertStorageError(.misuse) { try connection.run("INSERT INTO t(n) VALUES (?)", []) }
        try connection.run("INSERT INTO t(n) VALUES (?)", [99])
        XCTAssertEqual(connection.statementsPrepared - before, 2)
    }

    func testParameterCountAndTrailingStatementsAreRefused() throws {
        assertStorageError(.misuse) { try connection.query("SELECT ?, ?", [1]) }
        assertStorageError(.misuse) { try connection.query("SELECT 1; SELECT 2") }
        XCTAssertEqual(try connection.query("SELECT 1;  ").count, 1)
        assertStorageError(.other) { try connection.query("SELEKT 1") }
    }

    func testConstraintErrorsAreMappedToKinds() throws {
        try connection.execute(
            """
            CREATE TABLE parent (id INTEGER PRIMARY KEY, email TEXT UNIQUE);
            CREATE TABLE keyed (k TEXT PRIMARY KEY, v INTEGER CHECK (v >= 0) NOT NULL);
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent(id));
            INSERT INTO parent(id, email) VALUES (1, 'a@example.com');
            INSERT INTO keyed(k, v) VALUES ('x', 1);
            """)
        assertStorageError(.constraintUnique) { try connection.run("INSERT INTO parent(email) VALUES ('a@example.com')") }
        assertStorageError(.constraintPrimaryKey) { try connection.run("INSERT INTO parent(id) VALUES (1)") }
        assertStorageError(.constraintPrimaryKey) { try connection.run("INSERT INTO keyed(k, v) VALUES ('x', 2)") }
        assertStorageError(.constraintCheck) { try connection.run("INSERT INTO keyed(k, v) VALUES ('y', -1)") }
        assertStorageError(.constraintNotNull) { try connection.run("INSERT INTO keyed(k, v) VALUES ('z', NULL)") }
        assertStorageError(.constraintForeignKey) { try connection.run("INSERT INTO child(parent_id) VALUES (42)") }
        do {
            try connection.run("INSERT INTO parent(email) VALUES ('a@example.com')")
        } catch let error as StorageError {
            XCTAssertEqual(error.code, 2067)
            XCTAssertFalse(error.description.contains("example.com"), "description must not carry data")
        }
    }

    func testWriterPragmas() throws {
        XCTAssertEqual(try connection.scalar("PRAGMA journal_mode"), .text("wal"))
        XCTAssertEqual(try connection.scalarInt64("PRAGMA synchronous"), 2)
        XCTAssertEqual(try connection.scalarInt64("PRAGMA foreign_keys"), 1)
        XCTAssertEqual(try connection.scalarInt64("PRAGMA temp_store"), 2)
        // Deleted content (blanked sealed tokens, erased rows) is zeroed, not left in free pages.
        XCTAssertEqual(try connection.scalarInt64("PRAGMA secure_delete"), 1)
    }

    func testReaderConnectionIsReadOnly() throws {
        try connection.execute("CREATE TABLE t (x)")
        let reader = try SQLiteConnection(path: directory.file("db.sqlite"), role: .reader)
        defer { reader.close() }
        XCTAssertEqual(try reader.scalarInt64("PRAGMA query_only"), 1)
        assertStorageError(.readOnly) { try reader.run("INSERT INTO t VALUES (1)") }
        assertStorageError(.readOnly) { try reader.execute("CREATE TABLE u (y)") }
    }

    func testClosedConnectionRefusesWork() throws {
        connection.close()
        connection.close()  // idempotent
        assertStorageError(.misuse) { try connection.query("SELECT 1") }
        assertStorageError(.misuse) { try connection.execute("SELECT 1") }
    }

    func testStatementCacheIsBounded() throws {
        for i in 0...SQLiteConnection.statementCacheCapacity {
            XCTAssertEqual(try connection.scalarInt64("SELECT \(i)"), Int64(i))
        }
        XCTAssertLessThanOrEqual(connection.cachedStatementCount, SQLiteConnection.statementCacheCapacity)
        XCTAssertEqual(try connection.scalarInt64("SELECT 1"), 1)
    }

    func testStatementsFoundByTextStorageAndByContentAnswerTheirOwnQuery() throws {
        // Texts built on every call live in fresh storage: each must find the statement of
        // its own text (by content), never one cached under another text's address.
        for round in 0..<3 {
            for i in 0..<600 {
                let sql = "SELECT \(i) AS value, 'a text longer than fifteen bytes' AS padding"
                XCTAssertEqual(try connection.queryOne(sql)?.int64("value"), Int64(i), "round \(round)")
            }
        }
        // A text kept in one `String` (as the app's `static let` statements are) is prepared once.
        let stable = "SELECT 42 AS value, 'stable statement text' AS padding"
        let before = connection.statementsPrepared
        for _ in 0..<10 { XCTAssertEqual(try connection.queryOne(stable)?.int64("value"), 42) }
        XCTAssertEqual(connection.statementsPrepared - before, 1)
        // The same text in another storage is the same statement.
        let copy = String(decoding: Array(stable.utf8), as: UTF8.self)
        XCTAssertEqual(try connection.queryOne(copy)?.int64("value"), 42)
        XCTAssertEqual(connection.statementsPrepared - before, 1)
    }

    func testTransactionControlThroughRunIsNotCached() throws {
        try connection.execute("CREATE TABLE t (x)")
        let cached = connection.cachedStatementCount
        try connection.run("BEGIN")
        try connection.run("INSERT INTO t VALUES (1)")
        try connection.run("COMMIT")
        XCTAssertEqual(connection.cachedStatementCount, cached + 1)
        XCTAssertFalse(connection.isInTransaction)
    }

    func testCachedStatementColumnNamesFollowSchemaChanges() throws {
        try connection.execute("CREATE TABLE t (a INTEGER)")
        try connection.run("INSERT INTO t VALUES (1)")
        XCTAssertEqual(try connection.query("SELECT * FROM t")[0].columns.names, ["a"])
        XCTAssertEqual(try connection.query("SELECT * FROM t")[0].columns.names, ["a"])
        try connection.execute("ALTER TABLE t ADD COLUMN b TEXT")
        let row = try XCTUnwrap(try connection.queryOne("SELECT * FROM t"))
        XCTAssertEqual(row.columns.names, ["a", "b"])
        XCTAssertEqual(row["b"], .null)
        try connection.execute("ALTER TABLE t RENAME COLUMN b TO c")
        XCTAssertEqual(try connection.query("SELECT * FROM t")[0].columns.names, ["a", "c"])
    }

    func testWriterTransactionControlStatementsAreReusedAndKeptApart() throws {
        try connection.execute("CREATE TABLE t (x)")
        let cached = connection.cachedStatementCount
        for i in 0..<3 {
            try connection.runTransactionControl(.beginImmediate)
            XCTAssertTrue(connection.isInTransaction)
            try connection.runTransactionControl(.savepoint)
            try connection.run("INSERT INTO t VALUES (?)", [.int(i)])
            try connection.runTransactionControl(.rollbackToSavepoint)
            try connection.runTransactionControl(.release)
            try connection.runTransactionControl(.savepoint)
            try connection.run("INSERT INTO t VALUES (?)", [.int(10 + i)])
            try connection.runTransactionControl(.release)
            try connection.runTransactionControl(.commit)
            XCTAssertFalse(connection.isInTransaction)
        }
        XCTAssertEqual(try connection.query("SELECT x FROM t ORDER BY x").map { $0[0] }, [10, 11, 12])
        try connection.runTransactionControl(.beginImmediate)
        try connection.run("INSERT INTO t VALUES (99)")
        try connection.runTransactionControl(.rollback)
        XCTAssertEqual(try connection.scalarInt64("SELECT count(*) FROM t"), 3)
        // Only the two INSERTs and the two SELECTs entered the query cache.
        XCTAssertEqual(connection.cachedStatementCount, cached + 4)
        // A job body (transaction control off) still cannot prepare transaction control itself.
        connection.allowsTransactionControl = false
        assertStorageError(.misuse) { try connection.run("COMMIT") }
        connection.allowsTransactionControl = true
    }

    func testErrorKindMapping() {
        let cases: [(Int32, StorageError.Kind)] = [
            (2067, .constraintUnique), (1555, .constraintPrimaryKey), (787, .constraintForeignKey),
            (275, .constraintCheck), (1299, .constraintNotNull), (19, .constraint), (1811, .constraint),
            (5, .busy), (261, .busy), (517, .busy), (6, .busy), (11, .corrupt), (267, .corrupt), (26, .corrupt),
            (10, .ioError), (266, .ioError), (1290, .ioError), (14, .ioError), (13, .full), (8, .readOnly),
            (1032, .readOnly), (20, .typeMismatch), (21, .misuse), (23, .misuse), (25, .misuse), (1, .other), (7, .other),
        ]
        for (code, kind) in cases {
            XCTAssertEqual(StorageError.kind(for: code), kind, "code \(code)")
        }
    }

    func testOpeningAFileThatIsNotADatabaseFails() throws {
        try directory.write("garbage.sqlite", String(repeating: "this is not a database ", count: 100))
        assertStorageError(.corrupt) { try SQLiteConnection(path: directory.file("garbage.sqlite"), role: .writer) }
        assertStorageError(.corrupt) { try SQLiteDatabase(path: directory.file("garbage.sqlite")) }
    }

    func testOpeningAMissingFileReadOnlyFails() {
        assertStorageError(.ioError) { try SQLiteConnection(path: directory.file("missing.sqlite"), role: .reader) }
    }
}
