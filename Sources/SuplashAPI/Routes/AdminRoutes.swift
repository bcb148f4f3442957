import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `/v1/admin/*` — spec §8 (admin API keys only).
enum AdminRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("GET", "/v1/admin/users", Route { try listUsers($0, services) })
        router.add("GET", "/v1/admin/users/{uid}", Route { request in
            try requireAdmin(request, services)
            guard let uid = UUIDText.normalized(request.parameter("uid")),
                  let user = try services.users.user(id: uid) else { throw APIError.notFound }
            return .json(200, Presenter.profile(user.profile))
        })
    }

    /// - Throws: 401 without a valid credential, 403 `admin_required` for a user token.
    static func requireAdmin(_ request: APIRequest, _ services: Services) throws {
        guard case .admin = try services.authenticator.authenticate(request) else { throw APIError.adminRequired }
    }

    static func listUsers(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        try requireAdmin(request, services)
        let pageSize = try ListQuery.pageSize(request)
        var email: String?
        if let raw = request.query["email"] {
            guard let normalized = Credentials.normalizedEmail(raw) else {
                throw APIError.badRequest("invalid_query", "email must be an email address.")
            }
            email = normalized
        }
        let filters = "users|\(email ?? "")"
        var after: String?
        if let token = request.query["pageToken"] {
            after = try services.pageTokens.decode(token, scope: "admin", filters: filters, fields: 1)[0]
        }
        let rows = try services.users.listUsers(email: email, afterID: after, limit: pageSize + 1)
        let page = rows.prefix(pageSize)
        var members: [(String, JSONValue)] = [("users", .array(page.map(Presenter.profile)))]
        if rows.count > pageSize, let last = page.last {
            members.append(("nextPageToken", .string(services.pageTokens.encode(scope: "admin", filters: filters,
                                                                                 position: [last.id]))))
        }
        return .json(200, .object(members))
    }
}
