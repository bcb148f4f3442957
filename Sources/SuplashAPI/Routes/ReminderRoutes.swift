import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `users/{uid}/reminders` — spec §9 "Reminders": the next hydration reminder with the recent
/// history, and the notification actions `POST …/reminders/{reminderId}:drink`, `:snooze`,
/// `:dismiss`, `:open` (one route template; the action is the suffix after the last `:`).
/// Per-user access as every document route (a user names itself, an admin key any user).
enum ReminderRoutes {
    static let collection = "/v1/users/{uid}/reminders"
    static let action = "/v1/users/{uid}/reminders/{reminderAction}"
    /// §9: the history shows the 50 most recent.
    static let recentLimit = 50

    static func register(into router: inout Router<Route>, services: Services) {
        router.add("GET", collection, Route { try list($0, services) })
        router.add("POST", action, Route { try act($0, services) })
    }

    static func repository(_ services: Services) throws -> any ReminderRepository {
        guard let reminders = services.reminders else { throw APIError.unavailable("Reminders are not configured.") }
        return reminders
    }

    /// `GET …/reminders` → `{next: {id, dueAt, suggestedAmountMl}|null, recent: [{id, kind,
    /// dueAt, sentAt?, outcome}]}`.
    static func list(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let overview = try repository(services).reminderOverview(userID: uid, limit: recentLimit)
        return .json(200, ReminderPresenter.overview(overview))
    }

    /// `POST …/reminders/{reminderId}:{drink|snooze|dismiss|open}`.
    /// - Throws: 404 `not_found` (a malformed id or not the caller's reminder), 404
    ///   `route_not_found` (another action), 422 `validation_failed`, 409
    ///   `reminder_entry_deleted` / `reminder_not_hydration`, 403 as every per-user route.
    static func act(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let raw = request.parameter("reminderAction")
        guard let colon = raw.lastIndex(of: ":") else { throw APIError.routeNotFound }
        let verb = String(raw[raw.index(after: colon)...])
        guard ["drink", "snooze", "dismiss", "open"].contains(where: { $0.hasSameCodePoints(as: verb) }) else {
            throw APIError.routeNotFound
        }
        let (_, uid) = try Access.authorize(request, services: services)
        let repository = try repository(services)
        guard let id = UUIDText.normalized(String(raw[..<colon])) else { throw APIError.notFound }
        let body: JSONValue? = if request.http.body.isEmpty { Optional.none } else { try request.jsonBody() }
        let counters = services.reminderCounters
        switch verb {
        case "drink":
            let amount = try ReminderActionValidation.drink(body)
            switch try repository.drinkReminder(
                userID: uid, reminderID: id, amountMl: amount, deviceID: try request.deviceID(), now: request.now)
            {
            case .created(let entry):
                counters?.add(.acted)
                return EntryRoutes.entryResponse(201, entry, extra: [("Location", EntryRoutes.location(uid, entry.id))])
            case .existing(let entry):
                return EntryRoutes.entryResponse(200, entry, extra: [("Content-Location", EntryRoutes.location(uid, entry.id))])
            }
        case "snooze":
            let minutes = try ReminderActionValidation.snooze(body)
            let next = try repository.snoozeReminder(userID: uid, reminderID: id, minutes: minutes, now: request.now)
            counters?.add(.snoozed)
            return .json(200, ReminderPresenter.next(next))
        default:
            if let body { try ReminderActionValidation.empty(body) }
            let outcome: ReminderOutcome = verb == "dismiss" ? .dismissed : .opened
            try repository.recordReminderOutcome(userID: uid, reminderID: id, outcome: outcome, now: request.now)
            counters?.add(outcome == .dismissed ? .dismissed : .opened)
            return .empty(204)
        }
    }
}

/// The §9 reminder shapes.
enum ReminderPresenter {
    /// `{id, dueAt, suggestedAmountMl}`.
    static func next(_ n: NextReminder) -> JSONValue {
        .object([
            ("id", .string(n.id)), ("dueAt", Presenter.time(n.dueAt)),
            ("suggestedAmountMl", .number(JSONNumber(Int64(n.suggestedAmountMl)))),
        ])
    }

    /// `{id, kind, dueAt, sentAt?, outcome}` (`sentAt` absent while not sent).
    static func record(_ r: ReminderRecord) -> JSONValue {
        var members: [(String, JSONValue)] = [("id", .string(r.id)), ("kind", .string(r.kind.rawValue)), ("dueAt", Presenter.time(r.dueAt))]
        if let sentAt = r.sentAt { members.append(("sentAt", Presenter.time(sentAt))) }
        members.append(("outcome", .string(r.outcome.rawValue)))
        return .object(members)
    }

    /// `{next, recent}`.
    static func overview(_ o: ReminderOverview) -> JSONValue {
        .object([("next", o.next.map(next) ?? .null), ("recent", .array(o.recent.map(record)))])
    }

    /// The account export's `reminders`: the history as `GET …/reminders` shows it.
    static func export(_ uid: String, _ services: Services) throws -> JSONValue {
        guard let reminders = services.reminders else { return .array([]) }
        return .array(try reminders.reminderOverview(userID: uid, limit: ReminderRoutes.recentLimit).recent.map(record))
    }
}
