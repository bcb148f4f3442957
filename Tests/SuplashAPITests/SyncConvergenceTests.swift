import Foundation
import SuplashDomain
import SuplashJSON
import XCTest

/// Seeded, model-based convergence test of offline sync (spec §5).
///
/// A phone, a watch and a widget make random creates, patches and deletes of water entries
/// and bills, and set and clear day contexts, while randomly offline, and push (`POST /v1/sync`) and pull (`GET /v1/sync`) in random
/// interleavings against the real server. Every pushed mutation is recorded with its
/// arrival order; an oracle computes the last-write-wins result on
/// (`clientUpdatedAt`, device id, arrival). At the end every device's state, the server's
/// state and the oracle's agree — and each push result (`applied`/`superseded`) is the one
/// the oracle predicts at its arrival.
///
/// Set `SUPLASH_SYNC_SEED` to replay a failing run; the seed is printed in every failure.
final class SyncConvergenceTests: XCTestCase {
    /// SplitMix64: small, seedable, good enough for test schedules.
    struct RNG {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func chance(_ p: Double) -> Bool { Double(next() % 10_000) / 10_000 < p }
    }

    /// A document's value as devices and the oracle see it (nil = deleted / absent).
    enum Value: Equatable, CustomStringConvertible {
        /// `water_entries`: amountMl / source.
        case entry(amountMl: Int, source: String)
        /// `bills`: amountMinor / paid.
        case bill(amountMinor: Int64, paid: Bool)
        /// `days`: activeMinutes (nil = cleared).
        case day(activeMinutes: Int?)

        var description: String {
            switch self {
            case .entry(let amount, let source): "\(amount)/\(source)"
            case .bill(let amount, let paid): "bill \(amount)\(paid ? " paid" : "")"
            case .day(let minutes): "day \(minutes.map(String.init) ?? "-")"
            }
        }
    }

    /// A document: collection and id.
    struct Key: Hashable, CustomStringConvertible {
        var collection: String
        var id: String
        var description: String { "\(collection)/\(id)" }
    }

    struct Mutation {
        var key: Key
        var value: Value?  // nil = delete
        var clock: Int64  // clientUpdatedAt, ms
        var device: String
        var id: String { key.id }
    }

    /// What a document looks like after `value` is applied: a days delete clears the day's
    /// context (the day stays, with null fields); other deletes remove the document.
    static func applied(_ key: Key, _ value: Value?) -> Value? {
        value ?? (key.collection == "days" ? .day(activeMinutes: nil) : nil)
    }

    final class Device {
        let name: String
        let id: String
        let clockOffset: Int64
        var online = true
        var local: [Key: Value] = [:]
        var outbox: [Mutation] = []
        var achievements: JSONValue?
        var token: String?

        init(name: String, clockOffset: Int64) {
            self.name = name
            self.id = UUID().uuidString.lowercased()
            self.clockOffset = clockOffset
        }
    }

    func testRandomOfflineDevicesConvergeToTheLWWOracle() throws {
        let seed =
            ProcessInfo.processInfo.environment["SUPLASH_SYNC_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...UInt64(1 << 40))
        let context = "seed \(seed) (replay: SUPLASH_SYNC_SEED=\(seed) swift test --filter SyncConvergenceTests)"
        var rng = RNG(state: seed)
        let server = try TestServer()
        defer { server.stop() }
        let user = try server.signUp()

        let devices = [
            Device(name: "phone", clockOffset: Int64(rng.int(240_001)) - 120_000),
            Device(name: "watch", clockOffset: Int64(rng.int(240_001)) - 120_000),
            Device(name: "widget", clockOffset: Int64(rng.int(240_001)) - 120_000),
        ]
        let base = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
        let loggedAt = rfc3339(Date(timeIntervalSinceNow: -7200))
        var tick: Int64 = 0
        var known: [Key] = []  // every entry and bill ever created
        let dates = (1...6).map { String(format: "2025-07-%02d", $0) }  // day ids: few, so they conflict
        var arrivals: [Mutation] = []  // pushed mutations in server arrival order
        var oracle: [Key: (winner: Mutation, index: Int)] = [:]
        var superseded = 0

        func wins(_ m: Mutation, _ index: Int, over current: (winner: Mutation, index: Int)?) -> Bool {
            guard let c = current?.winner else { return true }
            if m.clock != c.clock { return m.clock > c.clock }
            if m.device != c.device { return m.device > c.device }
            return true  // equal pair: the later arrival wins
        }

        func data(_ m: Mutation) -> JSONValue {
            var members: [(String, JSONValue)] = [
                ("collection", .string(m.key.collection)), ("id", .string(m.id)),
                ("op", .string(m.value == nil ? "delete" : "upsert")),
                ("clientUpdatedAt", .string(rfc3339ms(m.clock))),
            ]
            switch m.value {
            case .entry(let amount, let source)?:
                members.append(
                    (
                        "data",
                        .object([
                            ("amountMl", .number(JSONNumber(amount))),
                            ("loggedAt", .string(loggedAt)), ("source", .string(source)),
                        ])
                    ))
            case .bill(let amount, let paid)?:
                // One subscription per bill id, so that bills never collide (`bill_exists`).
                let subscriber = String(m.id.filter { $0 != "-" })
                members.append(
                    (
                        "data",
                        .object([
                            ("provider", "ISKI"), ("subscriberNo", .string(subscriber)), ("period", "2025-05"),
                            ("consumptionM3", 12.5), ("amountMinor", .number(JSONNumber(amount))), ("dueDate", "2025-06-20"),
                            ("paidAt", paid ? .string(loggedAt) : .null),
                        ])
                    ))
            case .day(let minutes)?:
                members.append(("data", .object([("activeMinutes", minutes.map { .number(JSONNumber($0)) } ?? .null)])))
            case nil:
                break
            }
            return .object(members)
        }

        func value(of document: JSONValue?, in collection: String) -> Value? {
            guard let document, document != .null else { return nil }
            switch collection {
            case "water_entries":
                guard let amount = document["amountMl"]?.int64Value, let source = document["source"]?.stringValue else {
                    return nil
                }
                return .entry(amountMl: Int(amount), source: source)
            case "bills":
                guard let amount = document["amountMinor"]?.int64Value else { return nil }
                return .bill(amountMinor: amount, paid: document["paidAt"] != .null)
            case "days":
                return .day(activeMinutes: document["activeMinutes"]?.int64Value.map { Int($0) })
            default:
                return nil
            }
        }

        /// Applies one feed change to a device's or the test's copy.
        func apply(_ change: JSONValue, to state: inout [Key: Value]) {
            guard let collection = change["collection"]?.stringValue, collection != "profile",
                collection != "achievements", let id = change["id"]?.stringValue
            else { return }
            let key = Key(collection: collection, id: id)
            state[key] = change["deleted"] == .bool(true) ? nil : value(of: change["data"], in: collection)
        }

        func push(_ d: Device) throws {
            guard !d.outbox.isEmpty else { return }
            let batch = d.outbox
            d.outbox = []
            let r = try server.request(
                "POST", "/v1/sync", json: .object([("mutations", .array(batch.map(data)))]),
                token: user.token, headers: [("X-Device-ID", d.id)])
            guard r.status == 200, case .array(let results)? = r.json?["results"], results.count == batch.count else {
                throw TestFailure("\(context): push failed \(r.status) \(r.text)")
            }
            for (m, result) in zip(batch, results) {
                let index = arrivals.count
                arrivals.append(m)
                let expected = wins(m, index, over: oracle[m.key])
                if !expected { superseded += 1 }
                if expected { oracle[m.key] = (m, index) }
                let status = result["status"]?.stringValue ?? ""
                XCTAssertEqual(
                    status, expected ? "applied" : "superseded",
                    "\(context): mutation #\(index) \(m.key) from \(d.name) at \(m.clock): \(result)")
                if status == "applied" {
                    d.local[m.key] = Self.applied(m.key, m.value)
                } else if status == "superseded" {
                    d.local[m.key] = value(of: result["current"], in: m.key.collection)
                }
            }
        }

        func pull(_ d: Device) throws {
            // A pull without a token is a snapshot: it lists live documents only (spec §5), so the
            // device rebuilds from it — what it pushed before its first pull and another device
            // deleted since is gone. (Applied over the old copy, such a document would stay.)
            if d.token == nil { d.local = [:] }
            var more = true
            while more {
                var path = "/v1/sync?limit=\(1 + rng.int(20))"
                if let token = d.token { path += "&since=\(token)" }
                let r = try server.request("GET", path, token: user.token, headers: [("X-Device-ID", d.id)])
                guard r.status == 200, let json = r.json, case .array(let changes)? = json["changes"],
                    let token = json["nextToken"]?.stringValue
                else {
                    throw TestFailure("\(context): pull failed \(r.status) \(r.text)")
                }
                for change in changes {
                    apply(change, to: &d.local)
                    if change["collection"]?.stringValue == "achievements" { d.achievements = change["data"] }
                }
                d.token = token
                more = json["hasMore"] == .bool(true)
            }
        }

        var mutations = 0
        let target = 240 + rng.int(120)
        while mutations < target {
            let d = devices[rng.int(devices.count)]
            tick += Int64(1 + rng.int(40))
            let clock = rng.chance(0.1) ? base + tick : base + tick + d.clockOffset
            // Half the writes touch entries, a third bills, the rest days.
            let pick = rng.int(6)
            let collection = pick < 3 ? "water_entries" : pick < 5 ? "bills" : "days"
            func newValue() -> Value {
                switch collection {
                case "water_entries": .entry(amountMl: 50 + rng.int(950), source: d.name)
                case "bills": .bill(amountMinor: Int64(rng.int(100_000)), paid: rng.chance(0.5))
                default: .day(activeMinutes: rng.chance(0.2) ? nil : rng.int(1441))
                }
            }
            let live = d.local.keys.filter { $0.collection == collection && d.local[$0] != .day(activeMinutes: nil) }
                .sorted { $0.id < $1.id }
            let knownHere = known.filter { $0.collection == collection }
            switch rng.int(10) {
            case 0...2:
                let key =
                    collection == "days"
                    ? Key(collection: "days", id: dates[rng.int(dates.count)])
                    : Key(collection: collection, id: UUID().uuidString.lowercased())
                if collection != "days" { known.append(key) }
                let m = Mutation(key: key, value: newValue(), clock: clock, device: d.id)
                d.local[key] = m.value
                d.outbox.append(m)
                mutations += 1
            case 3...4:
                guard !live.isEmpty else { continue }
                let key = rng.chance(0.8) || knownHere.isEmpty ? live[rng.int(live.count)] : knownHere[rng.int(knownHere.count)]
                let m = Mutation(key: key, value: newValue(), clock: clock, device: d.id)
                d.local[key] = m.value
                d.outbox.append(m)
                mutations += 1
            case 5:
                guard !live.isEmpty else { continue }
                let m = Mutation(key: live[rng.int(live.count)], value: nil, clock: clock, device: d.id)
                d.local[m.key] = Self.applied(m.key, nil)
                d.outbox.append(m)
                mutations += 1
            case 6:
                d.online.toggle()
            case 7...8:
                if d.online { try push(d) }
            default:
                if d.online { try pull(d) }
            }
        }
        // Everyone comes back online: push what is left, then pull to the end.
        for d in devices {
            d.online = true
            try push(d)
        }
        for d in devices { try pull(d) }

        let expected = oracle.compactMapValues { Self.applied($0.winner.key, $0.winner.value) }
        var serverState: [Key: Value] = [:]
        var token: String?
        repeat {
            let path = "/v1/sync?limit=1000" + (token.map { "&since=\($0)" } ?? "")
            let r = try server.request("GET", path, token: user.token)
            guard case .array(let changes)? = r.json?["changes"] else { throw TestFailure("\(context): snapshot failed") }
            for change in changes { apply(change, to: &serverState) }
            token = r.json?["hasMore"] == .bool(true) ? r.json?["nextToken"]?.stringValue : nil
        } while token != nil
        XCTAssertEqual(serverState, expected, "\(context): server != oracle")
        for d in devices {
            XCTAssertEqual(d.local, expected, "\(context): \(d.name) != oracle")
        }
        // The computed achievements every device pulled last are the server's (the current
        // streak depends on the clock's day, so it is left out).
        func withoutCurrentStreak(_ v: JSONValue?) -> JSONValue? {
            guard case .object(let members)? = v else { return v }
            return .object(members.filter { $0.0 != "currentStreakDays" })
        }
        let achievements = try server.request("GET", "/v1/achievements/me", token: user.token).json
        for d in devices {
            XCTAssertEqual(
                withoutCurrentStreak(d.achievements), withoutCurrentStreak(achievements),
                "\(context): \(d.name)'s achievements")
        }
        for collection in ["water_entries", "bills", "days"] {
            XCTAssertTrue(arrivals.contains { $0.key.collection == collection }, "\(context): no \(collection) pushed")
        }
        XCTAssertGreaterThan(arrivals.count, 200, context)
        XCTAssertGreaterThan(superseded, 0, "\(context): the schedule produced no conflict")
    }
}

/// RFC 3339 with milliseconds, UTC, from ms since the epoch.
func rfc3339ms(_ ms: Int64) -> String {
    RFC3339.format(ms)
}
