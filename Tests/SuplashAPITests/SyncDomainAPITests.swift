import Foundation
import SuplashJSON
import XCTest

/// The domain collections in the sync feed and push (spec §5): `bills`, `days` and
/// `achievements` against the real server.
final class SyncDomainAPITests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?

    override class func setUp() { server = try? TestServer() }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    static func bill(period: String = "2025-05", subscriber: String = "1234567") -> JSONValue {
        [
            "provider": "ISKI", "subscriberNo": .string(subscriber), "period": .string(period), "consumptionM3": 12.5,
            "amountMinor": 58275, "dueDate": "2025-06-20",
        ]
    }

    func testBillsDaysAndAchievementsJoinTheFeedAsTheirRESTDocuments() throws {
        let s = try srv()
        let u = try s.signUp()
        let (_, start) = try s.pullAll(token: u.token)
        let created = try s.request("POST", "/v1/invoices/me/bills", json: Self.bill(), token: u.token)
        XCTAssertEqual(created.status, 201, created.text)
        let billID = try XCTUnwrap(created.json?["id"]?.stringValue)
        XCTAssertEqual(
            try s.request(
                "PUT", "/v1/water_logs/me/days/2025-07-01", json: ["maxTemperatureC": 33],
                token: u.token
            ).status, 201)
        XCTAssertEqual(
            try s.request(
                "POST", "/v1/water_logs/me/entries",
                json: ["amountMl": 300, "loggedAt": .string(rfc3339(Date()))], token: u.token
            ).status, 201)
        let (changes, token) = try s.pullAll(token: u.token, since: start)
        func change(_ collection: String) -> JSONValue? {
            changes.last { $0["collection"]?.stringValue == collection }
        }
        let bill = try XCTUnwrap(change("bills"))
        XCTAssertEqual(bill["id"]?.stringValue, billID)
        XCTAssertEqual(bill["data"], try s.request("GET", "/v1/invoices/me/bills/\(billID)", token: u.token).json)
        let day = try XCTUnwrap(change("days"))
        XCTAssertEqual(day["id"]?.stringValue, "2025-07-01")
        XCTAssertEqual(day["data"]?["goalMl"]?.int64Value, 3000)
        XCTAssertEqual(day["data"]?["maxTemperatureC"]?.int64Value, 33)
        let achievements = try XCTUnwrap(change("achievements"))
        XCTAssertEqual(achievements["id"]?.stringValue, u.id)
        XCTAssertEqual(achievements["data"], try s.request("GET", "/v1/achievements/me", token: u.token).json)
        // Positions: commit order across collections.
        XCTAssertEqual(changes.compactMap { $0["collection"]?.stringValue }, ["bills", "days", "water_entries", "achievements"])

        XCTAssertEqual(try s.request("DELETE", "/v1/invoices/me/bills/\(billID)", token: u.token).status, 204)
        let (after, _) = try s.pullAll(token: u.token, since: token)
        XCTAssertEqual(after.count, 1)
        XCTAssertEqual(after.first?["collection"]?.stringValue, "bills")
        XCTAssertEqual(after.first?["deleted"], .bool(true))
        XCTAssertEqual(after.first?["data"], .null)
        // A full snapshot leaves the tombstone out.
        let (snapshot, _) = try s.pullAll(token: u.token)
        XCTAssertFalse(snapshot.contains { $0["collection"]?.stringValue == "bills" })
        XCTAssertTrue(snapshot.contains { $0["collection"]?.stringValue == "days" })
    }

    func testPushWritesBillsAndDaysWithTheRESTRulesAndLWW() throws {
        let s = try srv()
        let u = try s.signUp()
        let now = Date()
        let t0 = rfc3339(now.addingTimeInterval(-120))
        let t1 = rfc3339(now.addingTimeInterval(-60))
        let t2 = rfc3339(now)
        let a = UUID().uuidString.lowercased()
        let b = UUID().uuidString.lowercased()
        var bad = Self.bill()
        if case .object(var m) = bad {
            m = m.map { $0.0 == "consumptionM3" ? ($0.0, .number(JSONNumber(1.0001))) : $0 }
            bad = .object(m)
        }
        let results = try s.push(
            token: u.token,
            [
                ["collection": "bills", "id": .string(a), "op": "upsert", "data": Self.bill(), "clientUpdatedAt": .string(t1)],
                ["collection": "bills", "id": .string(b), "op": "upsert", "data": Self.bill(), "clientUpdatedAt": .string(t1)],
                ["collection": "bills", "id": .string(b), "op": "upsert", "data": bad, "clientUpdatedAt": .string(t1)],
                [
                    "collection": "days", "id": "2025-07-02", "op": "upsert", "data": ["activeMinutes": 90],
                    "clientUpdatedAt": .string(t1),
                ],
                ["collection": "days", "id": "2025-02-30", "op": "upsert", "data": [:], "clientUpdatedAt": .string(t1)],
                [
                    "collection": "days", "id": "2025-07-03", "op": "upsert", "data": ["maxTemperatureC": 61],
                    "clientUpdatedAt": .string(t1),
                ],
                ["collection": "achievements", "id": .string(u.id), "op": "delete", "clientUpdatedAt": .string(t1)],
            ])
        XCTAssertEqual(
            results.map { $0["status"]?.stringValue ?? "" },
            ["applied", "rejected", "rejected", "applied", "rejected", "rejected", "rejected"])
        XCTAssertEqual(
            results.map { $0["error"]?["code"]?.stringValue ?? "" },
            [
                "", "bill_exists", "validation_failed", "", "validation_failed", "validation_failed",
                "read_only_collection",
            ])
        XCTAssertEqual(results[1]["error"]?["status"]?.int64Value, 409)
        func firstPointer(_ result: JSONValue) -> String? {
            guard case .array(let errors)? = result["error"]?["errors"] else { return nil }
            return errors.first?["pointer"]?.stringValue
        }
        XCTAssertEqual(firstPointer(results[2]), "/consumptionM3")
        XCTAssertEqual(firstPointer(results[4]), "/id")
        XCTAssertEqual(firstPointer(results[5]), "/maxTemperatureC")
        XCTAssertEqual(
            try s.request("GET", "/v1/invoices/me/bills/\(a)", token: u.token).json?["consumptionM3"],
            .number(JSONNumber(12.5)))
        // The day's goal rose as for PUT …/days: 2500 + 3 × 250.
        XCTAssertEqual(
            try s.request("GET", "/v1/water_logs/me/summary?date=2025-07-02", token: u.token)
                .json?["goalMl"]?.int64Value, 3250)

        // Older writes from another device lose and get the current documents (REST shapes).
        let other = UUID().uuidString
        let old = try s.push(
            token: u.token,
            [
                ["collection": "bills", "id": .string(a), "op": "delete", "clientUpdatedAt": .string(t0)],
                ["collection": "days", "id": "2025-07-02", "op": "delete", "clientUpdatedAt": .string(t0)],
            ], device: other)
        XCTAssertEqual(old.map { $0["status"]?.stringValue ?? "" }, ["superseded", "superseded"])
        XCTAssertEqual(old[0]["current"], try s.request("GET", "/v1/invoices/me/bills/\(a)", token: u.token).json)
        XCTAssertEqual(old[1]["current"]?["goalMl"]?.int64Value, 3250)
        XCTAssertEqual(old[1]["current"]?["date"]?.stringValue, "2025-07-02")

        // Newer ones win: the bill becomes a tombstone (its slot is free again), the day is cleared.
        let new = try s.push(
            token: u.token,
            [
                ["collection": "bills", "id": .string(a), "op": "delete", "clientUpdatedAt": .string(t2)],
                ["collection": "bills", "id": .string(b), "op": "upsert", "data": Self.bill(), "clientUpdatedAt": .string(t2)],
                ["collection": "days", "id": "2025-07-02", "op": "delete", "clientUpdatedAt": .string(t2)],
            ], device: other)
        XCTAssertEqual(new.map { $0["status"]?.stringValue ?? "" }, ["applied", "applied", "applied"])
        XCTAssertEqual(try s.request("GET", "/v1/invoices/me/bills/\(a)", token: u.token).status, 404)
        XCTAssertEqual(try s.request("GET", "/v1/invoices/me/bills/\(b)", token: u.token).status, 200)
        XCTAssertEqual(
            try s.request("GET", "/v1/water_logs/me/summary?date=2025-07-02", token: u.token)
                .json?["goalMl"]?.int64Value, 2500)
        let (changes, _) = try s.pullAll(token: u.token)
        let day = changes.first { $0["collection"]?.stringValue == "days" }
        XCTAssertEqual(day?["data"]?["activeMinutes"], .null)
        XCTAssertEqual(day?["deleted"], .bool(false))
        // A REST create of the taken slot is refused the same way.
        let dup = try s.request("POST", "/v1/invoices/me/bills", json: Self.bill(), token: u.token)
        XCTAssertEqual(dup.status, 409)
        XCTAssertEqual(dup.json?["code"]?.stringValue, "bill_exists")
    }

    func testBillAndDayWritesWakeOnlyThatUsersLongPoll() throws {
        let s = try srv()
        let a = try s.signUp()
        let b = try s.signUp()
        let (_, tokenA) = try s.pullAll(token: a.token)
        let (_, tokenB) = try s.pullAll(token: b.token)
        let writes: [(String, () throws -> Void)] = [
            (
                "bills",
                {
                    let r = try s.request("POST", "/v1/invoices/me/bills", json: Self.bill(period: "2025-04"), token: a.token)
                    XCTAssertEqual(r.status, 201)
                }
            ),
            (
                "days",
                {
                    let r = try s.push(
                        token: a.token,
                        [
                            [
                                "collection": "days", "id": "2025-07-04", "op": "upsert",
                                "data": ["maxTemperatureC": 31],
                                "clientUpdatedAt": .string(rfc3339(Date())),
                            ]
                        ])
                    XCTAssertEqual(r.first?["status"]?.stringValue, "applied")
                }
            ),
        ]
        var sinceA = tokenA
        for (collection, write) in writes {
            let group = DispatchGroup()
            let results = Results()
            for (name, token, since, wait) in [("a", a.token, sinceA, 20), ("b", b.token, tokenB, 2)] {
                group.enter()
                Thread.detachNewThread {
                    let start = Date()
                    let r = try? s.request("GET", "/v1/sync?since=\(since)&waitSeconds=\(wait)", token: token)
                    results.set(name, (r, Date().timeIntervalSince(start)))
                    group.leave()
                }
            }
            Thread.sleep(forTimeInterval: 0.4)
            try write()
            XCTAssertEqual(group.wait(timeout: .now() + 15), .success)
            // a's poll was woken by the commit: an answer at its (20 s) deadline has no changes.
            let (ra, _) = try XCTUnwrap(results.get("a"))
            let (rb, elapsedB) = try XCTUnwrap(results.get("b"))
            guard case .array(let changesA)? = ra?.json?["changes"] else { return XCTFail("a: no changes") }
            XCTAssertTrue(changesA.contains { $0["collection"]?.stringValue == collection }, "\(collection): \(changesA)")
            XCTAssertEqual(rb?.json?["changes"], .array([]), collection)
            XCTAssertEqual(rb?.json?["nextToken"]?.stringValue, tokenB)
            XCTAssertGreaterThanOrEqual(elapsedB, 1.9, "\(collection): b's poll waits for its deadline")
            sinceA = try XCTUnwrap(ra?.json?["nextToken"]?.stringValue)
        }
    }
}

/// Poll results by name. `@unchecked Sendable`: `values` is guarded by `lock`.
private final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: (TestResponse?, TimeInterval)] = [:]
    func set(_ name: String, _ value: (TestResponse?, TimeInterval)) { lock.withLock { values[name] = value } }
    func get(_ name: String) -> (TestResponse?, TimeInterval)? { lock.withLock { values[name] } }
}
