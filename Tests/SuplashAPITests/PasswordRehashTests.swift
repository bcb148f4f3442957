import Foundation
import SuplashStorage
import XCTest

/// A login re-hashes a password stored under other Argon2id parameters (the operator changed
/// `auth.argon2*`), once, and only with the right password (spec §3, login).
final class PasswordRehashTests: XCTestCase {
    /// The stored PHC string and the profile version of `userID`, read with the server stopped.
    func stored(_ dataDir: String, _ userID: String) throws -> (hash: String, version: Int64) {
        let db = try SQLiteDatabase(path: dataDir + "/suplash.sqlite", readers: 1)
        defer { db.close() }
        let row = try XCTUnwrap(
            try db.read { c in try c.queryOne("SELECT password_hash, version FROM users WHERE id = ?1", [.text(userID)]) })
        return (try XCTUnwrap(row["password_hash"].text), try XCTUnwrap(row["version"].int64))
    }

    func login(_ s: TestServer, _ email: String, _ password: String) throws -> Int {
        try s.request("POST", "/v1/auth/login", json: ["email": .string(email), "password": .string(password)]).status
    }

    func testLoginRehashesUnderNewParametersOnceAndOnlyWithTheRightPassword() throws {
        let first = try TestServer()  // m=8192, t=1 (TestServer's cheap parameters)
        let user = try first.signUp()
        XCTAssertEqual(first.stop(), 0)
        let dir = first.dataDir
        let before = try stored(dir, user.id)
        XCTAssertTrue(before.hash.hasPrefix("$argon2id$v=19$m=8192,t=1,p=1$"), before.hash)

        let second = try TestServer(dataDir: dir, environment: ["SUPLASH_AUTH_ARGON2_ITERATIONS": "2"])
        XCTAssertEqual(try login(second, user.email, "wrong horse battery"), 401)
        XCTAssertEqual(second.stop(), 0)
        XCTAssertEqual(try stored(dir, user.id).hash, before.hash, "a wrong password changes nothing")

        let third = try TestServer(dataDir: dir, environment: ["SUPLASH_AUTH_ARGON2_ITERATIONS": "2"])
        XCTAssertEqual(try login(third, user.email, "correct horse battery"), 200)
        XCTAssertEqual(third.stop(), 0)
        let renewed = try stored(dir, user.id)
        XCTAssertTrue(renewed.hash.hasPrefix("$argon2id$v=19$m=8192,t=2,p=1$"), renewed.hash)
        XCTAssertEqual(renewed.version, before.version, "the profile document is not revised")

        let fourth = try TestServer(dataDir: dir, environment: ["SUPLASH_AUTH_ARGON2_ITERATIONS": "2"])
        XCTAssertEqual(try login(fourth, user.email, "correct horse battery"), 200, "the new hash verifies")
        XCTAssertEqual(try login(fourth, user.email, "wrong horse battery"), 401)
        XCTAssertEqual(fourth.stop(), 0)
        XCTAssertEqual(try stored(dir, user.id).hash, renewed.hash, "a current hash is not rewritten")
    }
}
