import Foundation
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// Account export and erasure — spec §4 `users/{uid}`, §8 admin (KVKK/GDPR, App Store 5.1.1(v)).
enum AccountDataRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add(
            "GET", "/v1/users/{uid}/export",
            Route { request in
                let (principal, uid) = try Access.authorize(request, services: services)
                var masked = false
                if case .admin = principal { masked = true }
                return try export(uid, masked: masked, request, services)
            })
        router.add(
            "GET", "/v1/admin/users/{uid}/export",
            Route { request in
                try AdminRoutes.requireAdmin(request, services)
                return try export(try adminUserID(request), masked: true, request, services)
            })
        router.add(
            "DELETE", "/v1/users/{uid}",
            Route { request in
                let (_, uid) = try Access.authorize(request, services: services)
                return try erase(uid, request, services)
            })
        router.add(
            "DELETE", "/v1/admin/users/{uid}",
            Route { request in
                try AdminRoutes.requireAdmin(request, services)
                return try erase(try adminUserID(request), request, services)
            })
    }

    static func adminUserID(_ request: APIRequest) throws -> String {
        guard let uid = UUIDText.normalized(request.parameter("uid")) else { throw APIError.notFound }
        return uid
    }

    /// Exports larger than this (bytes) are answered from a temporary file.
    static let fileBodyThreshold = 64 * 1024

    /// `{profile, waterEntries, days, bills, achievements}`; `masked` for admin callers.
    ///
    /// A large export is written to an unlinked temporary file and streamed from there as
    /// the client reads (spec §7 "Memory per connection"): the read snapshot and the JSON in
    /// memory are released when this returns, however slowly the client reads. If the file
    /// cannot be written the answer is sent from memory.
    static func export(_ uid: String, masked: Bool, _ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        var response = try exportResponse(uid, masked: masked, request, services)
        if response.body.count > fileBodyThreshold,
            let file = try? HTTPFileBody.temporary(in: NSTemporaryDirectory(), { try $0.write(response.body) })
        {
            response.body = []
            response.bodyFile = file
        }
        return response
    }

    private static func exportResponse(_ uid: String, masked: Bool, _ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        guard let x = try services.domain.accountData.exportAccount(userID: uid) else { throw APIError.notFound }
        let today = services.domain.clocks.clock(x.profile.timezone).today(now: request.now)
        return .json(
            200,
            .object([
                ("profile", Presenter.profile(x.profile)),
                ("waterEntries", .array(x.entries.map(Presenter.entry))),
                ("days", .array(x.days.map { DomainPresenter.day($0) })),
                ("bills", .array(x.bills.map { DomainPresenter.bill($0, today: today, masked: masked) })),
                ("achievements", DomainPresenter.achievements(x.achievements, today: today)),
                ("devices", try DevicePresenter.export(uid, services)),
                ("reminders", try ReminderPresenter.export(uid, services)),
                (
                    "appleIdentities",
                    .array(
                        x.appleIdentities.map { a in
                            .object([
                                ("sub", .string(a.sub)), ("clientId", a.clientID.map(JSONValue.string) ?? .null),
                                ("linkedAt", Presenter.time(a.linkedAt)), ("refreshTokenKept", .bool(a.refreshTokenKept)),
                            ])
                        })
                ),
                ("exportedAt", Presenter.time(request.now)),
            ]), headers: [("Content-Disposition", "attachment; filename=\"suplash-export.json\"")])
    }

    /// Erases the account in one transaction, then refuses its tokens at once → 204.
    static func erase(_ uid: String, _ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        guard try services.domain.accountData.eraseAccount(userID: uid, now: request.now) else { throw APIError.notFound }
        services.revocations.revoke(userID: uid)
        // A queued Apple revoke job is sent by the revoke thread; the erasure never waits on Apple.
        services.appleRevokeWake?()
        return .empty(204)
    }
}
