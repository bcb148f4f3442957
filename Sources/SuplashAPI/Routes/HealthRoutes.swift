import SuplashHTTP
import SuplashJSON

/// `GET /healthz` (alive), `GET /readyz` (storage reachable, migrations applied, storage
/// healthy) and `GET /metrics` (Prometheus text) — spec §7.
enum HealthRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add(
            "GET", "/healthz",
            Route.onEventLoop { _ in
                .json(200, .object([("status", .string("ok"))]))
            })
        router.add(
            "GET", "/readyz",
            Route { _ in
                // Storage health first: a failed write probe, corruption or a read-only database
                // reported by any query (docs/operations.md "Storage errors").
                if let problem = services.storageHealth?.problem {
                    throw APIError.notReady(problem)
                }
                guard services.readiness() else {
                    throw APIError.unavailable("Storage is not ready.")
                }
                var body: [(String, JSONValue)] = [("status", .string("ready"))]
                // Push delivery never makes the instance unready: off or paused is a note.
                if let push = services.pushStatus { body.append(("push", .string(push()))) }
                return .json(200, .object(body))
            })
        router.add(
            "GET", "/metrics",
            Route { _ in
                var response = HTTPResponse(status: 200, body: Array(services.metrics.render().utf8))
                response.headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
                return response
            })
    }
}
