import SuplashCrypto
import SuplashHTTP

/// `GET /openapi.json` — the OpenAPI 3.1 document of every route (spec §7), unauthenticated
/// and never rate limited. The bytes are `docs/openapi.json` as read at start.
enum OpenAPIRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        let document = services.openAPIDocument
        let etag = "\"" + String(SHA256.hex(document).prefix(32)) + "\""
        router.add(
            "GET", "/openapi.json",
            Route { request in
                guard !document.isEmpty else { throw APIError.routeNotFound }
                if EntityTag.ifNoneMatchHits(request.header("If-None-Match"), current: etag) {
                    return .empty(304, headers: [("ETag", etag)])
                }
                var response = HTTPResponse(status: 200, body: document)
                response.headers.add(name: "Content-Type", value: "application/json")
                response.headers.add(name: "ETag", value: etag)
                return response
            })
    }
}
