import SuplashDomain
import SuplashHTTP

/// The route table; one file per API group (PocketBase-style).
enum Routes {
    static func registerAll(into router: inout Router<Route>, services: Services, configuration: APIConfiguration) {
        HealthRoutes.register(into: &router, services: services)
        AuthRoutes.register(into: &router, services: services)
        UserRoutes.register(into: &router, services: services)
        EntryRoutes.register(into: &router, services: services, configuration: configuration)
        AdminRoutes.register(into: &router, services: services)
        HydrationRoutes.register(into: &router, services: services)
        BillRoutes.register(into: &router, services: services)
        AccountDataRoutes.register(into: &router, services: services)
        DeviceRoutes.register(into: &router, services: services)
        ReminderRoutes.register(into: &router, services: services)
        CampaignRoutes.register(into: &router, services: services)
        SyncRoutes.register(into: &router, services: services, configuration: configuration)
        OpenAPIRoutes.register(into: &router, services: services)
    }
}

/// Per-user authorization of document routes (spec §3, §8).
enum Access {
    /// Resolves `{uid}` for `principal`: a user may name only itself (or `me`);
    /// an admin may name any existing user but not `me`.
    /// - Throws: 403 `permission_denied`, 400 `me_requires_user` (admin), 404 (admin, unknown uid).
    static func userID(_ raw: String, principal: Principal, services: Services) throws -> String {
        switch principal {
        case .user(let id, _):
            if raw.hasSameCodePoints(as: "me") { return id }
            guard let uid = UUIDText.normalized(raw), uid == id else { throw APIError.permissionDenied }
            return uid
        case .admin:
            if raw.hasSameCodePoints(as: "me") {
                throw APIError.badRequest(.meRequiresUser, "An admin key has no own user; name the uid.")
            }
            guard let uid = UUIDText.normalized(raw), try services.users.user(id: uid) != nil else {
                throw APIError.notFound
            }
            return uid
        }
    }

    /// Authenticates and resolves the `{uid}` path parameter in one step.
    static func authorize(_ request: APIRequest, services: Services) throws -> (Principal, String) {
        let principal = try services.authenticator.authenticate(request)
        return (principal, try userID(request.parameter("uid"), principal: principal, services: services))
    }
}

/// Query-parameter parsing shared by list routes (spec §4: `pageSize` 1–100, default 20).
enum ListQuery {
    static func pageSize(_ request: APIRequest, default defaultSize: Int = 20) throws(APIError) -> Int {
        guard let raw = request.query["pageSize"] else { return defaultSize }
        guard raw.utf8.count <= 4, raw.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int(raw),
            (1...100).contains(n)
        else {
            throw APIError.badRequest(.invalidPageSize, "pageSize must be an integer from 1 to 100.")
        }
        return n
    }

    static func instant(_ request: APIRequest, _ name: String) throws(APIError) -> Int64? {
        guard let raw = request.query[name] else { return nil }
        guard let t = RFC3339.parse(raw) else {
            throw APIError.badRequest(.invalidQuery, "\(name) must be an RFC 3339 timestamp.")
        }
        return t
    }
}
