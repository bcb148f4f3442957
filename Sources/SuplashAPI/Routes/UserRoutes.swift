import SuplashDomain
import SuplashHTTP

/// `users/{uid}` — spec §4 profile.
enum UserRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add(
            "GET", "/v1/users/{uid}",
            Route { request in
                let (_, uid) = try Access.authorize(request, services: services)
                guard let user = try services.users.user(id: uid) else { throw APIError.notFound }
                return profileResponse(user.profile, request: request, conditional: true)
            })
        router.add(
            "PATCH", "/v1/users/{uid}",
            Route { request in
                let (_, uid) = try Access.authorize(request, services: services)
                let patch = try request.jsonBody(mergePatch: true)
                let ifMatch = request.header("If-Match")
                let timeZones = services.timeZones
                let updated = try services.users.updateProfile(userID: uid, now: request.now) { current in
                    guard EntityTag.ifMatchPasses(ifMatch, current: EntityTag.forVersion(current.version)) else {
                        throw RepositoryError.preconditionFailed
                    }
                    return try ProfileValidation.applyMergePatch(patch, to: current, isKnownTimeZone: timeZones.isKnown)
                }
                return profileResponse(updated, request: request, conditional: false)
            })
    }

    /// The profile with its ETag; `conditional` (GET/HEAD) honours `If-None-Match` → 304.
    static func profileResponse(_ profile: UserProfile, request: APIRequest, conditional: Bool) -> HTTPResponse {
        let etag = EntityTag.forVersion(profile.version)
        if conditional, EntityTag.ifNoneMatchHits(request.header("If-None-Match"), current: etag) {
            return .empty(304, headers: [("ETag", etag)])
        }
        return .json(200, Presenter.profile(profile), headers: [("ETag", etag)])
    }
}
