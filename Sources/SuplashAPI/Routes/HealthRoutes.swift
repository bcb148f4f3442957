import SuplashHTTP
import SuplashJSON

/// `GET /healthz` (alive) and `GET /readyz` (storage reachable, migrations applied) — spec §7.
enum HealthRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("GET", "/healthz", Route { _ in
            .json(200, .object([("status", .string("ok"))]))
        })
        router.add("GET", "/readyz", Route { _ in
            guard services.readiness() else {
                throw APIError.unavailable("Storage is not ready.")
            }
            return .json(200, .object([("status", .string("ready"))]))
        })
    }
}
