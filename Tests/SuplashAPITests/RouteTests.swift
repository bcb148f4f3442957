import SuplashHTTP
import XCTest

@testable import SuplashAPI

/// Where a route's handler runs: a worker unless it was built with `Route.onEventLoop`.
final class RouteTests: XCTestCase {
    func testATrailingClosureRouteRunsOnAWorker() {
        // `Route { … }` must never resolve to the event-loop factory (a handler that touches
        // storage would then block a loop and skip the Idempotency-Key dispatch).
        let plain = Route { _ in .json(200, .object([])) }
        XCTAssertFalse(plain.runsOnEventLoop)
        let limited = Route(bodyLimit: 10) { _ in .json(200, .object([])) }
        XCTAssertFalse(limited.runsOnEventLoop)
        XCTAssertTrue(Route.onEventLoop { _ in .json(200, .object([])) }.runsOnEventLoop)
    }
}
