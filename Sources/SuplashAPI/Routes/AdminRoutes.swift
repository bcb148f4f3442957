import Foundation
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `/v1/admin/*` — spec §8 (admin API keys only).
enum AdminRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("GET", "/v1/admin/users", Route { try listUsers($0, services) })
        router.add(
            "GET", "/v1/admin/users/{uid}",
            Route { request in
                try requireAdmin(request, services)
                guard let uid = UUIDText.normalized(request.parameter("uid")),
                    let user = try services.users.user(id: uid)
                else { throw APIError.notFound }
                return .json(200, Presenter.profile(user.profile))
            })
        router.add(
            "GET", "/v1/admin/stats",
            Route { request in
                try requireAdmin(request, services)
                let dayStart = request.now - request.now % 86_400_000
                let stats = try services.operations.adminStats(
                    dayStart: dayStart,
                    thirtyDaysAgo: request.now - 30 * 86_400_000)
                return .json(
                    200,
                    .object([
                        ("users", .int(stats.users)), ("activeUsersToday", .int(stats.activeUsersToday)),
                        ("activeUsers30d", .int(stats.activeUsers30d)), ("entriesToday", .int(stats.entriesToday)),
                        ("databaseBytes", .int(stats.databaseBytes)),
                    ]))
            })
        router.add(
            "POST", "/v1/admin/backup",
            Route { request in
                try requireAdmin(request, services)
                let path = try backupPath(services.backupDirectory, now: request.now)
                let bytes = try services.operations.backup(to: path)
                return .json(201, .object([("path", .string(path)), ("bytes", .int(bytes))]))
            })
    }

    /// `<dir>/suplash-20261129T081500123Z.sqlite`, creating `dir` (mode 0700) when missing.
    static func backupPath(_ directory: String, now: Int64) throws -> String {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw APIError.unavailable("The backup directory cannot be created.")
        }
        let stamp = RFC3339.format(now).filter { $0.isNumber || $0 == "T" || $0 == "Z" }
        return directory + "/suplash-\(stamp).sqlite"
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
                throw APIError.badRequest(.invalidQuery, "email must be an email address.")
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
            members.append(
                (
                    "nextPageToken",
                    .string(
                        services.pageTokens.encode(
                            scope: "admin", filters: filters,
                            position: [last.id]))
                ))
        }
        return .json(200, .object(members))
    }
}
