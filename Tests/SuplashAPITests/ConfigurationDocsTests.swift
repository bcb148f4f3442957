import Foundation
import XCTest

/// The key table of docs/configuration.md is generated from the settings declarations
/// (`suplash-server config --markdown`) and must stay equal to them.
final class ConfigurationDocsTests: XCTestCase {
    func testKeyTableInTheDocsIsTheGeneratedOne() throws {
        let (status, generated, err) = try TestServer.runCLI(["config", "--markdown"])
        XCTAssertEqual(status, 0, err)
        let lines = generated.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let begin = try XCTUnwrap(lines.first, "no output")
        XCTAssertTrue(begin.hasPrefix("<!-- BEGIN generated"), begin)
        let end = try XCTUnwrap(lines.dropLast().last, "no end marker")
        let file = try String(contentsOfFile: TestServer.packageRoot + "/docs/configuration.md", encoding: .utf8)
        let documented = try XCTUnwrap(
            file.range(of: begin).flatMap { start in
                file.range(of: end, range: start.upperBound..<file.endIndex).map { String(file[start.lowerBound..<$0.upperBound]) + "\n" }
            }, "docs/configuration.md lacks the generated key table's markers; run scripts/update-config-docs")
        XCTAssertEqual(documented, generated, "docs/configuration.md's key table is stale: run scripts/update-config-docs")
    }

    /// Every key has a row, its environment name follows the camelCase → upper-snake rule,
    /// and a flag is shown where one sets the key.
    func testTableRowsFollowTheNamingRules() throws {
        let (_, generated, _) = try TestServer.runCLI(["config", "--markdown"])
        XCTAssertTrue(generated.contains("| `server.dataDir` | `SUPLASH_SERVER_DATA_DIR` | `--data-dir` | `./data` |"), generated)
        XCTAssertTrue(generated.contains("| `mail.resendURL` | `SUPLASH_MAIL_RESEND_URL` | |"), generated)
        XCTAssertTrue(
            generated.contains(
                "| `ratelimit.loginFailuresPerAccountPer15Minutes` | `SUPLASH_RATELIMIT_LOGIN_FAILURES_PER_ACCOUNT_PER15_MINUTES` |"))
        let (_, defaults, _) = try TestServer.runCLI(["config", "defaults"])
        let keyCount = generated.split(separator: "\n").filter { $0.hasPrefix("| `") }.count
        XCTAssertEqual(keyCount, defaults.components(separatedBy: "\":").count - 1 - 12, "one row per key (12 sections)")
    }
}

/// Loading the typed settings: every value is checked against its key's type at start-up,
/// with messages that name the key and never the value; precedence file < environment < flags.
final class SettingsLoadingTests: XCTestCase {
    func testAValueOfTheWrongTypeIsRefusedNamingTheKey() throws {
        let (level, _, err) = try TestServer.runCLI(["config"], environment: ["SUPLASH_LOG_LEVEL": "loudly"])
        XCTAssertNotEqual(level, 0)
        XCTAssertTrue(err.contains("log.level must be debug, info, warning or error"), err)
        XCTAssertFalse(err.contains("loudly"), err)
        let (driver, _, err2) = try TestServer.runCLI(["config"], environment: ["SUPLASH_STORAGE_DRIVER": "mysql"])
        XCTAssertNotEqual(driver, 0)
        XCTAssertTrue(err2.contains("storage.driver must be sqlite or postgres"), err2)
        let (flag, _, err3) = try TestServer.runCLI(["config", "--port", "eighty"])
        XCTAssertNotEqual(flag, 0)
        XCTAssertTrue(err3.contains("server.port must be a number"), err3)
    }

    func testTheConfigFileIsTypedAndClosed() throws {
        let dir = TestServer.makeDataDir()
        let wrongType = dir + "/wrong-type.json"
        try Data(#"{"server": {"port": "eighty"}}"#.utf8).write(to: URL(fileURLWithPath: wrongType))
        let (s1, _, e1) = try TestServer.runCLI(["config", "--config", wrongType])
        XCTAssertNotEqual(s1, 0)
        XCTAssertTrue(e1.contains("server.port must be an integer"), e1)
        XCTAssertFalse(e1.contains("eighty"), e1)
        let unknown = dir + "/unknown.json"
        try Data(#"{"server": {"prot": 1}}"#.utf8).write(to: URL(fileURLWithPath: unknown))
        let (s2, _, e2) = try TestServer.runCLI(["config", "--config", unknown])
        XCTAssertNotEqual(s2, 0)
        XCTAssertTrue(e2.contains("unknown config key server.prot"), e2)
        let valid = dir + "/valid.json"
        try Data(#"{"server": {"port": 7000, "corsOrigins": "https://a.example"}, "ratelimit": {"enabled": false}}"#.utf8)
            .write(to: URL(fileURLWithPath: valid))
        let (s3, out, e3) = try TestServer.runCLI(
            ["config", "--config", valid, "--port", "9000"],
            environment: [
                "SUPLASH_SERVER_PORT": "8000",
                "SUPLASH_SERVER_CORS_ORIGINS": " https://b.example , ,https://c.example",
            ])
        XCTAssertEqual(s3, 0, e3)
        XCTAssertTrue(out.contains(#""port":9000"#), out)
        XCTAssertTrue(out.contains(#""corsOrigins":"https://b.example,https://c.example""#), out)
        XCTAssertTrue(out.contains(#""enabled":false"#), out)
    }
}
