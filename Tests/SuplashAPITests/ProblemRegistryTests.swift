import Foundation
import SuplashAPI
import SuplashDomain
import SuplashHTTP
import SuplashJSON
import XCTest

/// The problem-code registry (spec §2): one list of every `code` the server can emit, the
/// HTTP engine's included; `/openapi.json` and `docs/errors.md` agree with it.
final class ProblemRegistryTests: XCTestCase {
    static var registryCodes: Set<String> { Set(ProblemRegistry.all.map(\.code)) }

    func testEntriesAreUniqueWellFormedAndBuildTheProblem() {
        var seen = Set<String>()
        for entry in ProblemRegistry.all {
            XCTAssertTrue(seen.insert(entry.code).inserted, "\(entry.code) is listed twice")
            XCTAssertNotNil(entry.code.wholeMatch(of: /[a-z][a-z0-9_]*/), entry.code)
            XCTAssertTrue((400...599).contains(entry.status), entry.code)
            XCTAssertFalse(entry.title.isEmpty, entry.code)
            XCTAssertFalse(entry.meaning.contains("|"), "\(entry.code): a table cell cannot hold |")
            XCTAssertEqual(ProblemRegistry.entry(entry.code), entry)
            // APIError takes status, title and type from the registry.
            let problem = APIError(entry, detail: "d").problem
            XCTAssertEqual(problem["type"]?.stringValue, entry.type)
            XCTAssertEqual(problem["title"]?.stringValue, entry.title)
            if case .number(let status) = problem["status"] { XCTAssertEqual(status.int64Value, Int64(entry.status)) } else { XCTFail("status") }
            XCTAssertEqual(problem["code"]?.stringValue, entry.code)
        }
        XCTAssertEqual(ProblemCode.validationFailed.type, "https://suplash.app/problems/validation-failed")
        // The spec §2/§5 codes are registered even where this build does not emit them yet.
        XCTAssertEqual(ProblemRegistry.entry("storage_failed")?.status, 503)
        XCTAssertEqual(ProblemRegistry.entry("sync_history_changed")?.status, 410)
        // Lookups compare code points: a Kelvin sign is not a K.
        XCTAssertNil(ProblemRegistry.entry("\u{212A}"))
    }

    func testTextCodesTakeStatusAndTitleFromTheRegistry() {
        let e = APIError(status: 400, code: "email_taken", title: "Whatever")
        XCTAssertEqual(e.status, 409)
        XCTAssertEqual(e.title, "Conflict")
        XCTAssertEqual(APIError.badRequest("invalid_query", "x").status, 400)
    }

    func testEveryEngineCodeIsRegisteredWithItsStatus() {
        XCTAssertEqual(HTTPEngineError.problemCodes.count, 7)
        for error in HTTPEngineError.everyKind {
            let entry = ProblemRegistry.entry(error.code)
            XCTAssertNotNil(entry, "engine code \(error.code) is not in ProblemRegistry")
            XCTAssertEqual(entry?.status, error.status, error.code)
            let response = APIError.engineResponse(error)
            XCTAssertEqual(response.status, error.status)
            let json = try? JSONParser.parse(response.body)
            XCTAssertEqual(json?["code"]?.stringValue, error.code)
            XCTAssertEqual(json?["type"]?.stringValue, entry?.type)
        }
        // The documented codes (spec §2), not the engine's old private names.
        XCTAssertEqual(HTTPEngineError.badRequest(.invalidHost).code, "bad_request")
        XCTAssertEqual(HTTPEngineError.unsupportedTransferCoding.code, "not_implemented")
        XCTAssertEqual(HTTPEngineError.shuttingDown.code, "unavailable")
        let draining = APIError.engineResponse(.shuttingDown)
        XCTAssertEqual(draining.headers.first(name: "Retry-After"), "1", "503 unavailable carries Retry-After (spec §2)")
    }

    /// Every code literal written in `Sources/` (the ways codes are written: `code: "x"`,
    /// `.badRequest("x"`, `.conflict("x"`, `.unauthorized("x"`, `rejection("x"`) is in the registry,
    /// and a literal status next to it agrees with the registry's.
    func testEveryCodeLiteralInTheSourceTreeIsRegistered() throws {
        let root = URL(fileURLWithPath: TestServer.packageRoot + "/Sources")
        // The client library and its CLI parse problems; they do not emit them.
        let clientSide: Set<String> = ["SuplashKit", "SuplashHealthImport", "suplash"]
        let patterns: [Regex<(Substring, Substring)>] = [
            /[^A-Za-z]code: "([a-z0-9_]+)"/,
            /\.(?:badRequest|conflict|unauthorized)\("([a-z0-9_]+)"/,
            /rejection\("([a-z0-9_]+)"/,
            /RejectedMutation\(code: "([a-z0-9_]+)"/,
        ]
        var found: [String: String] = [:]
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let target = url.path.dropFirst(root.path.count + 1).split(separator: "/").first.map(String.init) ?? ""
            guard !clientSide.contains(target) else { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            for pattern in patterns {
                for match in text.matches(of: pattern) { found[String(match.1), default: url.lastPathComponent] = url.lastPathComponent }
            }
            for match in text.matches(of: /APIError\(\s*status: (\d+), code: "([a-z0-9_]+)"/) {
                XCTAssertEqual(
                    ProblemRegistry.entry(String(match.2))?.status, Int(match.1),
                    "\(url.lastPathComponent): \(match.2) has another status in ProblemRegistry")
            }
        }
        // The scan reaches the API, the domain and both stores.
        for code in ["invalid_mutation", "entry_exists", "admin_key_exists", "health_kit_uuid_exists", "clock_skew"] {
            XCTAssertNotNil(found[code], "the scan did not find \(code)")
        }
        for (code, file) in found.sorted(by: { $0.key < $1.key }) {
            XCTAssertNotNil(ProblemRegistry.entry(code), "\(file) emits `\(code)`, which ProblemRegistry lacks")
        }
    }

    func testOpenAPIListsEveryCode() throws {
        let data = try XCTUnwrap(FileManager.default.contents(atPath: TestServer.packageRoot + "/docs/openapi.json"))
        let document = try JSONParser.parse(Array(data))
        let schemas = document["components"]?["schemas"]
        guard case .array(let values) = schemas?["Problem"]?["properties"]?["code"]?["enum"] else {
            return XCTFail("docs/openapi.json: components.schemas.Problem.properties.code has no enum")
        }
        let documented = Set(values.compactMap(\.stringValue))
        let sent = Set(ProblemRegistry.all.filter { $0.scope != .commandLine }.map(\.code))
        let expected =
            "["
            + ProblemRegistry.all.filter { $0.scope != .commandLine }
            .map { "\"\($0.code)\"" }.joined(separator: ", ") + "]"
        XCTAssertEqual(documented, sent, "Problem.code enum of docs/openapi.json must be: \(expected)")
        guard case .array(let fieldValues) = schemas?["FieldError"]?["properties"]?["code"]?["enum"] else {
            return XCTFail("docs/openapi.json: FieldError.code has no enum")
        }
        XCTAssertEqual(Set(fieldValues.compactMap(\.stringValue)), Set(FieldErrorCode.allCases.map(\.rawValue)))
    }

    func testErrorsDocumentIsGeneratedFromTheRegistry() throws {
        let path = TestServer.packageRoot + "/docs/errors.md"
        let file = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        XCTAssertEqual(
            file, ProblemRegistry.markdown(),
            "docs/errors.md is stale: swift run suplash-server problem-codes --markdown > docs/errors.md")
        let (status, out, _) = try TestServer.runCLI(["problem-codes", "--markdown"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(out, ProblemRegistry.markdown())
        for code in Self.registryCodes { XCTAssertTrue(file.contains("`\(code)`"), code) }
    }

    /// End to end: the engine's framing answers carry the documented codes.
    func testEngineProblemsOverHTTP() throws {
        let server = try TestServer()
        defer { server.stop() }
        let noHost = HTTPTestClient.parse(try HTTPTestClient.raw(port: server.port, Array("GET /healthz HTTP/1.1\r\n\r\n".utf8)))
        XCTAssertEqual(noHost.first?.status, 400)
        XCTAssertEqual(noHost.first?.json?["code"]?.stringValue, "bad_request")
        XCTAssertEqual(noHost.first?.json?["type"]?.stringValue, ProblemCode.badRequest.type)
        // A final chunked after a coding the engine does not implement (RFC 9112 §6.3).
        let gzipTE = HTTPTestClient.parse(
            try HTTPTestClient.raw(
                port: server.port,
                Array(
                    "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".utf8)))
        XCTAssertEqual(gzipTE.first?.status, 501)
        XCTAssertEqual(gzipTE.first?.json?["code"]?.stringValue, "not_implemented")
    }
}
