import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `admin/notifications` — spec §8: campaigns to a segment of users at the segment's local time
/// in each user's zone (docs/reminders.md, "Campaigns"). Admin keys only.
enum CampaignRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("POST", "/v1/admin/notifications", Route { try create($0, services) })
        router.add("GET", "/v1/admin/notifications/{id}", Route { try figures($0, services) })
    }

    static func repository(_ services: Services) throws -> any CampaignRepository {
        guard let campaigns = services.campaigns else { throw APIError.unavailable("Campaigns are not configured.") }
        return campaigns
    }

    /// `POST /v1/admin/notifications {segment, texts, sendAt?}` → 202 `{id}`: the scheduler
    /// reaches the users in batches.
    /// - Throws: 403 `admin_required`, 422 `validation_failed`.
    static func create(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        try AdminRoutes.requireAdmin(request, services)
        let campaign = try CampaignValidation.create(try request.jsonBody())
        let id = services.newID(now: request.now)
        try repository(services).createCampaign(id: id, campaign: campaign, now: request.now)
        return .json(202, .object([("id", .string(id))]), headers: [("Location", "/v1/admin/notifications/\(id)")])
    }

    /// `GET /v1/admin/notifications/{id}` → `{queued, sent, failed}`; 404 for an unknown id.
    static func figures(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        try AdminRoutes.requireAdmin(request, services)
        guard let id = UUIDText.normalized(request.parameter("id")),
            let f = try repository(services).campaignFigures(id: id)
        else { throw APIError.notFound }
        return .json(
            200,
            .object([
                ("queued", .number(JSONNumber(Int64(f.queued)))), ("sent", .number(JSONNumber(Int64(f.sent)))),
                ("failed", .number(JSONNumber(Int64(f.failed)))),
            ]))
    }
}
