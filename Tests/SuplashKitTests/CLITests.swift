import Foundation
import XCTest

@testable import SuplashKit

/// Runs the real `suplash` binary (built next to the test bundle) against a real server.
final class CLITests: XCTestCase {
    static var cli: String {
        (KitTestServer.executable as NSString).deletingLastPathComponent + "/suplash"
    }

    func run(_ arguments: [String], home: String, server: KitTestServer) throws -> (Int32, String, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.cli)
        p.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["XDG_CONFIG_HOME"] = home + "/config"
        env["XDG_DATA_HOME"] = home + "/data"
        env["SUPLASH_SERVER"] = server.url.absoluteString
        env["SUPLASH_PASSWORD"] = testPassword
        p.environment = env
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    func testLoginLogOfflineSyncTodayAndImport() throws {
        let server = try KitTestServer()
        let home = server.dataDir + "/home"
        let email = testEmail()
        var r = try run(["today"], home: home, server: server)
        XCTAssertEqual(r.0, 3, "not signed in")
        r = try run(["signup", "--email", email], home: home, server: server)
        XCTAssertEqual(r.0, 0, r.2)
        let credentials = home + "/config/suplash/credentials.json"
        let mode = (try FileManager.default.attributesOfItem(atPath: credentials)[.posixPermissions] as? NSNumber)?.intValue
        XCTAssertEqual(mode, 0o600)

        r = try run(["--json", "log", "250", "--source", "watch"], home: home, server: server)
        XCTAssertEqual(r.0, 0, r.2)
        XCTAssertEqual(JSONRead.bool(JSONRead.object(r.1)?["synced"]), true)

        server.stop()
        r = try run(["log", "330"], home: home, server: server)
        XCTAssertEqual(r.0, 0, "offline log succeeds: \(r.2)")
        XCTAssertTrue(r.1.contains("Saved offline"), r.1)
        r = try run(["--json", "today"], home: home, server: server)
        XCTAssertEqual(r.0, 0, r.2)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["totalMl"]), 580, "offline total from the local store")
        r = try run(["sync"], home: home, server: server)
        XCTAssertEqual(r.0, 4, "unreachable")

        try server.restart()
        r = try run(["--json", "sync"], home: home, server: server)
        XCTAssertEqual(r.0, 0, r.2)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["applied"]), 1)
        r = try run(["--json", "today"], home: home, server: server)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["totalMl"]), 580)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["entriesCount"]), 2)

        r = try run(["--json", "import-health", HealthImportTests.fixture], home: home, server: server)
        XCTAssertEqual(r.0, 0, r.2)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["uploaded"]), 10)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["malformed"]), 4)
        r = try run(["--json", "import-health", HealthImportTests.fixture], home: home, server: server)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["uploaded"]), 0)
        XCTAssertEqual(JSONRead.int(JSONRead.object(r.1)?["duplicates"]), 11)

        r = try run(["--json", "bills"], home: home, server: server)
        XCTAssertEqual(r.0, 0, r.2)
        r = try run(["--json", "history", "--days", "3"], home: home, server: server)
        XCTAssertEqual((JSONRead.object(r.1)?["buckets"] as? [Any])?.count, 3)
        r = try run(["export", "--output", home + "/export.json"], home: home, server: server)
        XCTAssertEqual(r.0, 0, r.2)
        r = try run(["log", "99999"], home: home, server: server)
        XCTAssertEqual(r.0, 2)
        r = try run(["logout"], home: home, server: server)
        XCTAssertEqual(r.0, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: credentials))
    }
}
