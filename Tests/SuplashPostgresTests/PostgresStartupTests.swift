import Foundation
import SuplashPostgres
import SuplashPostgresStore
import XCTest

/// The start-up rules on PostgreSQL (spec §7, docs/operations.md): the token secret lives in
/// the database (`server_secrets`), so a database with accounts but no secret is refused; a
/// database without the Suplash schema beside a data dir that holds state is refused.
final class PostgresStartupTests: XCTestCase {
    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    static var executable: String {
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        for _ in 0..<4 {
            dir = dir.deletingLastPathComponent()
            let candidate = dir.appendingPathComponent("suplash-server").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/suplash-server"
    }

    func dataDir() throws -> String {
        let path = NSTemporaryDirectory() + "suplash-pg-startup-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        fixtures.cleanups.append { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    /// `serve` on PostgreSQL: nil when it printed `listening on` (then stopped), else its
    /// exit status and stderr.
    func serve(_ dataDir: String, _ extra: [String] = []) throws -> (Int32, String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.executable)
        p.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir] + extra
        p.currentDirectoryURL = URL(fileURLWithPath: PostgresTestSupport.packageRoot)
        var env = ProcessInfo.processInfo.environment
        env["SUPLASH_STORAGE_DRIVER"] = "postgres"
        env["SUPLASH_STORAGE_POSTGRES_URL"] = try PostgresTestSupport.url()
        env["SUPLASH_STORAGE_POSTGRES_POOL_SIZE"] = "2"
        p.environment = env
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        if String(decoding: line, as: UTF8.self).contains("listening on") {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
            return nil
        }
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    func testDatabaseWithoutSchemaBesideStateIsRefused() throws {
        let db = try PostgresTestSupport.freshDatabase(poolSize: 1)
        db.close()
        let dir = try dataDir()
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/jwt-secret", contents: Data("x".utf8)))
        guard let (status, stderr) = try serve(dir) else { return XCTFail("started on a dropped database") }
        XCTAssertEqual(status, 65, stderr)
        XCTAssertTrue(
            stderr.contains("no Suplash schema") && stderr.contains("migrate-data") && stderr.contains("--init-empty"),
            stderr)
        XCTAssertNil(try serve(try dataDir()), "a new data dir on an empty database is a first start")
    }

    func testAccountsWithoutTheirSecretAreRefused() throws {
        let (store, _) = try fixtures.postgresStore()
        try fixtures.makeUsers(store)
        let dir = try dataDir()
        guard let (status, stderr) = try serve(dir) else { return XCTFail("started without the token secret") }
        XCTAssertEqual(status, 65, stderr)
        XCTAssertTrue(stderr.contains("server_secrets") && stderr.contains("--new-jwt-secret"), stderr)
        XCTAssertNil(try serve(dir, ["--new-jwt-secret"]), "a new secret on purpose")
        XCTAssertNil(try serve(dir), "the stored secret is used from now on")
    }
}
