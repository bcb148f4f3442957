import SuplashHTTP
import XCTest

final class RouterTests: XCTestCase {
    private func router() -> Router<String> {
        var r = Router<String>()
        r.add("GET", "/healthz", "health")
        r.add("GET", "/v1/users/{uid}", "getUser")
        r.add("PATCH", "/v1/users/{uid}", "patchUser")
        r.add("DELETE", "/v1/users/{uid}", "deleteUser")
        r.add("GET", "/v1/users/{uid}/export", "export")
        r.add("GET", "/v1/water_logs/{uid}/entries", "listEntries")
        r.add("POST", "/v1/water_logs/{uid}/entries", "createEntry")
        r.add("POST", "/v1/water_logs/{uid}/entries:batch", "batch")
        r.add("GET", "/v1/water_logs/{uid}/entries/{entryId}", "getEntry")
        r.add("GET", "/v1/admin/users", "adminUsers")
        r.add("GET", "/", "root")
        return r
    }

    private func found(_ match: Router<String>.Match) -> (String, [String: String], String)? {
        if case .found(let handler, let parameters, let template) = match { return (handler, parameters, template) }
        return nil
    }

    func testLiteralAndParameters() throws {
        let r = router()
        XCTAssertEqual(found(r.match(method: "GET", path: "/healthz"))?.0, "health")
        let user = try XCTUnwrap(found(r.match(method: "GET", path: "/v1/users/me")))
        XCTAssertEqual(user.0, "getUser")
        XCTAssertEqual(user.1, ["uid": "me"])
        XCTAssertEqual(user.2, "/v1/users/{uid}")
        let entry = try XCTUnwrap(found(r.match(method: "GET", path: "/v1/water_logs/u1/entries/e2")))
        XCTAssertEqual(entry.0, "getEntry")
        XCTAssertEqual(entry.1, ["uid": "u1", "entryId": "e2"])
        XCTAssertEqual(found(r.match(method: "GET", path: "/"))?.0, "root")
        XCTAssertEqual(found(r.match(method: "GET", path: "/v1/users/me/export"))?.0, "export")
    }

    func testColonLiteralIsItsOwnSegment() throws {
        let r = router()
        let batch = try XCTUnwrap(found(r.match(method: "POST", path: "/v1/water_logs/u1/entries:batch")))
        XCTAssertEqual(batch.0, "batch")
        XCTAssertEqual(batch.2, "/v1/water_logs/{uid}/entries:batch")
        XCTAssertEqual(found(r.match(method: "POST", path: "/v1/water_logs/u1/entries"))?.0, "createEntry")
        // `entries:batch` with GET: the path exists, only for POST.
        guard case .methodNotAllowed(let allowed) = r.match(method: "GET", path: "/v1/water_logs/u1/entries:batch") else {
            return XCTFail("expected 405")
        }
        XCTAssertEqual(allowed, ["POST"])
        // Another suffix is not `entries:batch`.
        guard case .notFound = r.match(method: "POST", path: "/v1/water_logs/u1/entries:other") else {
            return XCTFail("expected 404")
        }
    }

    func testNotFoundVersusMethodNotAllowed() {
        let r = router()
        guard case .notFound = r.match(method: "GET", path: "/v1/nope") else { return XCTFail("expected 404") }
        guard case .notFound = r.match(method: "GET", path: "/v1/users") else { return XCTFail("expected 404") }
        guard case .notFound = r.match(method: "GET", path: "/v1/users/") else { return XCTFail("empty segment is not a parameter") }
        guard case .notFound = r.match(method: "GET", path: "/healthz/") else { return XCTFail("trailing slash is significant") }
        guard case .methodNotAllowed(let allowed) = r.match(method: "PUT", path: "/v1/users/abc") else {
            return XCTFail("expected 405")
        }
        XCTAssertEqual(allowed, ["DELETE", "GET", "HEAD", "PATCH"])
    }

    func testHeadFallsBackToGet() {
        let r = router()
        XCTAssertEqual(found(r.match(method: "HEAD", path: "/healthz"))?.0, "health")
    }

    func testLiteralWinsOverParameterAndBacktracks() {
        var r = Router<String>()
        r.add("GET", "/a/{x}/c", "param")
        r.add("GET", "/a/b/d", "literal")
        XCTAssertEqual(found(r.match(method: "GET", path: "/a/b/d"))?.0, "literal")
        XCTAssertEqual(found(r.match(method: "GET", path: "/a/b/c"))?.0, "param", "backtracks from the literal branch")
        XCTAssertEqual(found(r.match(method: "GET", path: "/a/b/c"))?.1, ["x": "b"])
    }

    func testCopiesAreIndependent() {
        var a = Router<String>()
        a.add("GET", "/x", "x")
        var b = a
        b.add("GET", "/y", "y")
        guard case .notFound = a.match(method: "GET", path: "/y") else { return XCTFail("copy-on-write broken") }
        XCTAssertEqual(found(b.match(method: "GET", path: "/x"))?.0, "x")
    }

    func testRouteTableListsEveryRouteOnce() {
        let table = router().routes.map { "\($0.method) \($0.template)" }
        XCTAssertEqual(
            table,
            [
                "GET /", "GET /healthz", "GET /v1/admin/users",
                "DELETE /v1/users/{uid}", "GET /v1/users/{uid}", "PATCH /v1/users/{uid}",
                "GET /v1/users/{uid}/export",
                "GET /v1/water_logs/{uid}/entries", "POST /v1/water_logs/{uid}/entries",
                "GET /v1/water_logs/{uid}/entries/{entryId}",
                "POST /v1/water_logs/{uid}/entries:batch",
            ])
    }

    func testSegmentsAreBytesBetweenSlashes() throws {
        var r = Router<String>()
        r.add("GET", "/a/{x}", "one")
        r.add("GET", "/a/{x}/{y}", "two")
        r.add("GET", "/café/{x}", "accented")
        r.add("GET", "", "empty-template")
        // A capture keeps multi-byte UTF-8 and percent escapes as sent.
        XCTAssertEqual(found(r.match(method: "GET", path: "/a/ü%20x"))?.1, ["x": "ü%20x"])
        XCTAssertEqual(found(r.match(method: "GET", path: "/a/p/q"))?.1, ["x": "p", "y": "q"])
        XCTAssertEqual(found(r.match(method: "GET", path: "/café/1"))?.0, "accented")
        // A literal is compared byte for byte: another spelling of the same text is another path.
        guard case .notFound = r.match(method: "GET", path: "/cafe\u{301}/1") else { return XCTFail("NFD spelling") }
        // An empty segment is never a capture, wherever it is.
        guard case .notFound = r.match(method: "GET", path: "//p") else { return XCTFail("leading empty segment") }
        guard case .notFound = r.match(method: "GET", path: "/a//q") else { return XCTFail("inner empty segment") }
        guard case .notFound = r.match(method: "GET", path: "/a/p/q/") else { return XCTFail("trailing slash") }
        // No segments: the empty path and `/` both reach the root.
        XCTAssertEqual(found(r.match(method: "GET", path: ""))?.0, "empty-template")
        XCTAssertEqual(found(r.match(method: "GET", path: "/"))?.0, "empty-template")
    }

    func testReplacingARouteKeepsOneEntryPerMethod() throws {
        var r = Router<String>()
        r.add("GET", "/x/{a}", "first")
        r.add("GET", "/x/{b}", "second")
        XCTAssertEqual(found(r.match(method: "GET", path: "/x/1"))?.0, "second")
        XCTAssertEqual(found(r.match(method: "GET", path: "/x/1"))?.1, ["b": "1"])
        XCTAssertEqual(r.routes.count, 1)
    }
}
