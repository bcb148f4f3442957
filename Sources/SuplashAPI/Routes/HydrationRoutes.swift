import SuplashCrypto
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// Summary, stats, day context and achievements — spec §4 (water_logs, achievements), §6.
enum HydrationRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("GET", "/v1/water_logs/{uid}/summary", Route { try summary($0, services) })
        router.add("GET", "/v1/water_logs/{uid}/stats", Route { try stats($0, services) })
        router.add("PUT", "/v1/water_logs/{uid}/days/{date}", Route { try putDay($0, services) })
        router.add("GET", "/v1/achievements/{uid}", Route { try achievements($0, services) })
    }

    /// A local date from the query, or nil when absent.
    /// - Throws: 400 `invalid_query` when present but not a calendar date.
    static func queryDate(_ request: APIRequest, _ name: String) throws(APIError) -> LocalDate? {
        guard let raw = request.query[name] else { return nil }
        guard let d = LocalDate(parsing: raw) else {
            throw APIError.badRequest(.invalidQuery, "\(name) must be a calendar date YYYY-MM-DD.")
        }
        return d
    }

    /// The strong ETag of a computed document: a digest of its bytes.
    static func contentTag(_ body: [UInt8]) -> String {
        "\"" + String(SHA256.hex(body).prefix(32)) + "\""
    }

    /// `GET …/summary?date=` — the Watch/widget payload (spec §4).
    static func summary(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let (profile, clock) = try services.domain.profileAndClock(uid, services)
        let today = clock.today(now: request.now)
        let date = try queryDate(request, "date") ?? today
        let data = try services.domain.hydration.daySummary(userID: uid, date: date, range: clock.dayRange(date))
        let total = data.totalMl
        let goal = HydrationRules.dayGoalMl(baseGoalMl: HydrationRules.baseGoalMl(profile), context: data.context)
        let progress = (Double(total) / Double(max(goal, 1)) * 10_000).rounded() / 10_000
        let body = JSONValue.object([
            ("date", .string(date.description)),
            ("timezone", .string(profile.timezone)),
            ("totalMl", DomainPresenter.int(total)),
            ("goalMl", DomainPresenter.int(goal)),
            ("progress", DomainPresenter.double(progress)),
            ("goalMet", .bool(total >= goal)),
            ("entriesCount", DomainPresenter.int(data.entriesCount)),
            ("lastEntries", .array(data.lastEntries.map(Presenter.entry))),
            ("recentAmountsMl", .array(data.recentAmountsMl.map { DomainPresenter.int($0) })),
            ("currentStreakDays", DomainPresenter.int(data.achievements.currentStreakDays(today: today))),
        ]).serialized()
        let etag = contentTag(body)
        if EntityTag.ifNoneMatchHits(request.header("If-None-Match"), current: etag) {
            return .empty(304, headers: [("ETag", etag)])
        }
        var response = HTTPResponse(status: 200, body: body)
        response.headers.add(name: "Content-Type", value: "application/json")
        response.headers.add(name: "ETag", value: etag)
        response.headers.add(name: "Cache-Control", value: "private, no-cache")
        return response
    }

    /// `GET …/stats?from=&to=&interval=day|week|month` (spec §4).
    static func stats(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        guard let from = try queryDate(request, "from"), let to = try queryDate(request, "to") else {
            throw APIError.badRequest(.invalidQuery, "from and to are required local dates YYYY-MM-DD.")
        }
        let rawInterval = request.query["interval"] ?? "day"
        guard let interval = StatsInterval.allCases.first(where: { $0.rawValue.hasSameCodePoints(as: rawInterval) }) else {
            throw APIError.badRequest(.invalidQuery, "interval must be day, week or month.")
        }
        do {
            _ = try StatsRules.bucketStarts(from: from, to: to, interval: interval)
        } catch .reversedRange {
            throw APIError.badRequest(.invalidRange, "to must not be before from.")
        } catch {
            throw APIError.badRequest(.invalidRange, "At most \(StatsRules.maxBuckets) buckets per call.")
        }
        let (profile, _) = try services.domain.profileAndClock(uid, services)
        let figures = try services.domain.hydration.dayFigures(userID: uid, from: from, to: to)
        let buckets = try StatsRules.buckets(
            from: from, to: to, interval: interval,
            baseGoalMl: HydrationRules.baseGoalMl(profile),
            totals: figures.totals, contexts: figures.contexts)
        return .json(
            200,
            .object([
                ("from", .string(from.description)),
                ("to", .string(to.description)),
                ("interval", .string(interval.rawValue)),
                ("timezone", .string(profile.timezone)),
                ("buckets", .array(buckets.map(DomainPresenter.bucket))),
            ]))
    }

    /// `PUT …/days/{date}` `{maxTemperatureC?, activeMinutes?}` — 201 new, 200 replaced.
    static func putDay(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        guard let date = LocalDate(parsing: request.parameter("date")) else {
            throw APIError.badRequest(.invalidDate, "The date must be a calendar date YYYY-MM-DD.")
        }
        let deviceID = try request.deviceID()
        let content = try DayValidation.put(try request.jsonBody())
        let (day, created) = try services.domain.hydration.putDay(
            userID: uid, date: date, content: content,
            deviceID: deviceID, now: request.now)
        let (profile, _) = try services.domain.profileAndClock(uid, services)
        let goal = HydrationRules.dayGoalMl(baseGoalMl: HydrationRules.baseGoalMl(profile), context: day.content)
        return .json(
            created ? 201 : 200, DomainPresenter.day(day, goalMl: goal),
            headers: [("ETag", EntityTag.forVersion(day.version))])
    }

    /// `GET /v1/achievements/{uid}` (spec §4).
    static func achievements(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let (_, clock) = try services.domain.profileAndClock(uid, services)
        let a = try services.domain.hydration.achievements(userID: uid)
        let body = DomainPresenter.achievements(a, today: clock.today(now: request.now)).serialized()
        let etag = contentTag(body)
        if EntityTag.ifNoneMatchHits(request.header("If-None-Match"), current: etag) {
            return .empty(304, headers: [("ETag", etag)])
        }
        var response = HTTPResponse(status: 200, body: body)
        response.headers.add(name: "Content-Type", value: "application/json")
        response.headers.add(name: "ETag", value: etag)
        return response
    }
}
