import SuplashHTTP
import XCTest

final class HTTPHeadersTests: XCTestCase {
    func testLookupIsCaseInsensitiveAndOrdered() {
        var h: HTTPHeaders = ["Content-Type": "application/json"]
        h.add(name: "Set-Cookie", value: "a=1")
        h.add(name: "set-cookie", value: "b=2")
        XCTAssertEqual(h.first(name: "content-TYPE"), "application/json")
        XCTAssertEqual(h.values(name: "SET-COOKIE"), ["a=1", "b=2"])
        XCTAssertTrue(h.contains(name: "set-cookie"))
        XCTAssertFalse(h.contains(name: "set-cookiee"))
        XCTAssertNil(h.first(name: "content-typ"))
        XCTAssertEqual(h.count, 3)
        h.replaceOrAdd(name: "Set-Cookie", value: "c=3")
        XCTAssertEqual(h.values(name: "set-cookie"), ["c=3"])
        h.remove(name: "CONTENT-type")
        XCTAssertEqual(h.map { $0.name }, ["Set-Cookie"])
    }

    func testCaseFoldingOnlyAppliesToLetters() {
        // '@' (0x40) and '`' (0x60) differ only in bit 0x20 but are not letters.
        let h: HTTPHeaders = ["X@": "1"]
        XCTAssertNil(h.first(name: "x`"))
        XCTAssertEqual(h.first(name: "x@"), "1")
    }

    func testListValues() {
        let h = HTTPHeaders([("Connection", "keep-alive, Upgrade"), ("connection", " ,close ")])
        XCTAssertEqual(h.listValues(name: "connection"), ["keep-alive", "Upgrade", "close"])
    }

    func testDefaultErrorResponseIsProblemJSON() {
        let r = HTTPServerConfiguration.defaultErrorResponse(.headerFieldsTooLarge, requestID: "x")
        XCTAssertEqual(r.status, 431)
        XCTAssertEqual(r.headers.first(name: "content-type"), "application/problem+json")
        XCTAssertEqual(
            String(decoding: r.body, as: UTF8.self),
            "{\"type\":\"about:blank\",\"title\":\"Request Header Fields Too Large\",\"status\":431,\"code\":\"header_fields_too_large\"}")
        let unavailable = HTTPServerConfiguration.defaultErrorResponse(.shuttingDown, requestID: "x")
        XCTAssertEqual(unavailable.status, 503)
        XCTAssertEqual(unavailable.headers.first(name: "retry-after"), "1")
        for error in [
            HTTPEngineError.badRequest(.obsoleteLineFolding), .requestTimeout, .contentTooLarge, .uriTooLong,
            .unsupportedTransferCoding,
        ] {
            XCTAssertEqual(HTTPServerConfiguration.defaultErrorResponse(error, requestID: "x").status, error.status)
        }
    }
}
