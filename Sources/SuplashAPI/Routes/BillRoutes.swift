import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `invoices/{uid}/bills` — spec §4 water bills: CRUD, comparison, estimate, due.
///
/// Subscriber numbers are personal data: they appear only in the owner's own documents;
/// an admin caller sees them masked (last 3 characters).
enum BillRoutes {
    static let collection = "/v1/invoices/{uid}/bills"
    static let item = "/v1/invoices/{uid}/bills/{billId}"

    static func register(into router: inout Router<Route>, services: Services) {
        router.add("POST", collection, Route { try create($0, services) })
        router.add("GET", collection, Route { try list($0, services) })
        router.add("GET", item, Route { try get($0, services) })
        router.add("PATCH", item, Route { try patch($0, services) })
        router.add("DELETE", item, Route { try delete($0, services) })
        router.add("GET", item + "/comparison", Route { try comparison($0, services) })
        router.add("GET", "/v1/invoices/{uid}/estimate", Route { try estimate($0, services) })
        router.add("GET", "/v1/invoices/{uid}/due", Route { try due($0, services) })
    }

    static func location(_ uid: String, _ id: String) -> String { "/v1/invoices/\(uid)/bills/\(id)" }

    /// The caller, the user id, the user's local today, and whether to mask subscriber numbers.
    static func context(_ request: APIRequest, _ services: Services) throws -> (uid: String, today: LocalDate, masked: Bool) {
        let (principal, uid) = try Access.authorize(request, services: services)
        let (_, clock) = try services.domain.profileAndClock(uid, services)
        var masked = false
        if case .admin = principal { masked = true }
        return (uid, clock.today(now: request.now), masked)
    }

    static func billResponse(
        _ status: Int, _ bill: Bill, today: LocalDate, masked: Bool,
        extra: [(String, String)] = []
    ) -> HTTPResponse {
        .json(
            status, DomainPresenter.bill(bill, today: today, masked: masked),
            headers: [("ETag", EntityTag.forVersion(bill.version))] + extra)
    }

    /// The bill id from the path; a malformed id names no document → 404.
    static func billID(_ request: APIRequest) throws -> String {
        guard let id = UUIDText.normalized(request.parameter("billId")) else { throw APIError.notFound }
        return id
    }

    static func create(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (uid, today, masked) = try context(request, services)
        let deviceID = try request.deviceID()
        let input = try BillValidation.create(try request.jsonBody())
        let id = input.id ?? services.newID(now: request.now)
        switch try services.domain.bills.createBill(
            userID: uid, id: id, content: input.content, deviceID: deviceID,
            now: request.now)
        {
        case .created(let bill):
            return billResponse(201, bill, today: today, masked: masked, extra: [("Location", location(uid, bill.id))])
        case .existing(let bill):
            return billResponse(200, bill, today: today, masked: masked, extra: [("Content-Location", location(uid, bill.id))])
        }
    }

    static func get(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (uid, today, masked) = try context(request, services)
        guard let bill = try services.domain.bills.bill(userID: uid, id: try billID(request)) else { throw APIError.notFound }
        let etag = EntityTag.forVersion(bill.version)
        if EntityTag.ifNoneMatchHits(request.header("If-None-Match"), current: etag) {
            return .empty(304, headers: [("ETag", etag)])
        }
        return billResponse(200, bill, today: today, masked: masked)
    }

    static func patch(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (uid, today, masked) = try context(request, services)
        let id = try billID(request)
        let deviceID = try request.deviceID()
        let body = try request.jsonBody(mergePatch: true)
        let ifMatch = request.header("If-Match")
        let bill = try services.domain.bills.updateBill(
            userID: uid, id: id, deviceID: deviceID, now: request.now,
            precondition: { EntityTag.ifMatchPasses(ifMatch, current: EntityTag.forVersion($0.version)) },
            { try BillValidation.applyMergePatch(body, to: $0) })
        return billResponse(200, bill, today: today, masked: masked)
    }

    static func delete(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let id = try billID(request)
        let ifMatch = request.header("If-Match")
        try services.domain.bills.deleteBill(
            userID: uid, id: id, deviceID: try request.deviceID(), now: request.now,
            precondition: { EntityTag.ifMatchPasses(ifMatch, current: EntityTag.forVersion($0.version)) })
        return .empty(204)
    }

    /// Period desc, id desc; keyset pages of `pageSize` (1–100, default 20).
    static func list(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (uid, today, masked) = try context(request, services)
        let pageSize = try ListQuery.pageSize(request)
        let filters = "bills"
        var cursor: BillCursor?
        if let token = request.query["pageToken"] {
            let fields = try services.pageTokens.decode(token, scope: uid, filters: filters, fields: 2)
            guard let period = YearMonth(parsing: fields[0]) else {
                throw APIError.badRequest(.invalidPageToken, "The page token is invalid or belongs to another query.")
            }
            cursor = BillCursor(period: period, id: fields[1])
        }
        let rows = try services.domain.bills.listBills(userID: uid, after: cursor, limit: pageSize + 1)
        let page = rows.prefix(pageSize)
        var members: [(String, JSONValue)] = [
            ("bills", .array(page.map { DomainPresenter.bill($0, today: today, masked: masked) }))
        ]
        if rows.count > pageSize, let last = page.last {
            let token = services.pageTokens.encode(
                scope: uid, filters: filters,
                position: [last.content.period.description, last.id])
            members.append(("nextPageToken", .string(token)))
        }
        return .json(200, .object(members))
    }

    /// `…/bills/{billId}/comparison` (spec §4): vs the previous month and the same month last
    /// year of the same subscription (provider + subscriberNo).
    static func comparison(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let repo = services.domain.bills
        guard let bill = try repo.bill(userID: uid, id: try billID(request)) else { throw APIError.notFound }
        let c = bill.content
        func reference(_ period: YearMonth?) throws -> BillContent? {
            guard let period else { return nil }
            return try repo.bill(userID: uid, provider: c.provider, subscriberNo: c.subscriberNo, period: period)?.content
        }
        let result = BillRules.compare(
            c, previousMonth: try reference(c.period.previous),
            sameMonthLastYear: try reference(c.period.sameMonthLastYear))
        return .json(200, DomainPresenter.comparison(result, billID: bill.id, period: c.period))
    }

    /// `…/estimate?provider=&subscriberNo=` (spec §4).
    static func estimate(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (uid, today, masked) = try context(request, services)
        guard let provider = request.query["provider"], BillValidation.isProviderCode(provider),
            let subscriberNo = request.query["subscriberNo"], (1...32).contains(subscriberNo.count)
        else {
            throw APIError.badRequest(.invalidQuery, "provider (an upper-case code) and subscriberNo are required.")
        }
        guard services.domain.tariffs.knows(provider: provider) else {
            throw APIError(.unknownProvider, detail: "No tariff is configured for this provider.")
        }
        let latest = try services.domain.bills.latestBills(
            userID: uid, provider: provider, subscriberNo: subscriberNo,
            limit: 3)
        guard !latest.isEmpty else {
            throw APIError(.noBills, detail: "There are no bills for this subscription.")
        }
        guard
            let e = BillRules.estimate(
                latestBills: latest.map(\.content), provider: provider,
                catalog: services.domain.tariffs, today: today)
        else {
            throw APIError(.noTariffInEffect, detail: "No tariff of this provider is in effect this month.")
        }
        return .json(
            200,
            DomainPresenter.estimate(
                e, provider: provider, subscriberNo: masked ? BillRules.maskSubscriberNo(subscriberNo) : subscriberNo,
                month: today.yearMonth, basedOn: latest.count))
    }

    /// `…/due?withinDays=N` (1–60, default 3): unpaid bills due by local today + N, soonest first.
    static func due(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (uid, today, masked) = try context(request, services)
        var within = 3
        if let raw = request.query["withinDays"] {
            guard raw.utf8.count <= 2, raw.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int(raw),
                (1...60).contains(n)
            else {
                throw APIError.badRequest(.invalidQuery, "withinDays must be an integer from 1 to 60.")
            }
            within = n
        }
        let bills = try services.domain.bills.unpaidBills(userID: uid, dueThrough: today.adding(days: within))
        return .json(
            200,
            .object([
                ("today", .string(today.description)),
                ("withinDays", DomainPresenter.int(within)),
                ("bills", .array(bills.map { DomainPresenter.bill($0, today: today, masked: masked) })),
            ]))
    }
}
