import Foundation
import SuplashDomain
import SuplashJSON
import XCTest

/// Seeded, model-based convergence test of offline sync (issue 3, spec §5).
///
/// A phone, a watch and a widget make random creates, patches and deletes of water entries
/// while randomly offline, and push (`POST /v1/sync`) and pull (`GET /v1/sync`) in random
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
    struct Value: Equatable, CustomStringConvertible {
        var amountMl: Int
        var source: String
        var description: String { "\(amountMl)/\(source)" }
    }

    struct Mutation {
        var id: String
        var value: Value?          // nil = delete
        var clock: Int64           // clientUpdatedAt, ms
        var device: String
    }

    final class Device {
        let name: String
        let id: String
        let clockOffset: Int64
        var online = true
        var local: [String: Value] = [:]
        var outbox: [Mutation] = []
        var token: String?

        init(name: String, clockOffset: Int64) {
            self.name = name
            self.id = UUID().uuidString.lowercased()
            self.clockOffset = clockOffset
        }
    }

    func testRandomOfflineDevicesConvergeToTheLWWOracle() throws {
        let seed = ProcessInfo.processInfo.environment["SUPLASH_SYNC_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...UInt64(1 << 40))
        let context = "seed \(seed) (replay: SUPLASH_SYNC_SEED=\(seed) swift test --filter SyncConvergenceTests)"
        var rng = RNG(state: seed)
        let server = try TestServer()
        defer { server.stop() }
        let user = try server.signUp()

        let devices = [Device(name: "phone", clockOffset: Int64(rng.int(240_001)) - 120_000),
                       Device(name: "watch", clockOffset: Int64(rng.int(240_001)) - 120_000),
                       Device(name: "widget", clockOffset: Int64(rng.int(240_001)) - 120_000)]
        let base = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
        let loggedAt = rfc3339(Date(timeIntervalSinceNow: -7200))
        var tick: Int64 = 0
        var known: [String] = []                   // every id ever created
        var arrivals: [Mutation] = []              // pushed mutations in server arrival order
        var oracle: [String: (winner: Mutation, index: Int)] = [:]
        var superseded = 0

        func wins(_ m: Mutation, _ index: Int, over current: (winner: Mutation, index: Int)?) -> Bool {
            guard let c = current?.winner else { return true }
            if m.clock != c.clock { return m.clock > c.clock }
            if m.device != c.device { return m.device > c.device }
            return true  // equal pair: the later arrival wins
        }

        func data(_ m: Mutation) -> JSONValue {
            var members: [(String, JSONValue)] = [
                ("collection", "water_entries"), ("id", .string(m.id)),
                ("op", .string(m.value == nil ? "delete" : "upsert")),
                ("clientUpdatedAt", .string(rfc3339ms(m.clock))),
            ]
            if let v = m.value {
                members.append(("data", .object([("amountMl", .number(JSONNumber(v.amountMl))),
                                                 ("loggedAt", .string(loggedAt)), ("source", .string(v.source))])))
            }
            return .object(members)
        }

        func value(of document: JSONValue?) -> Value? {
            guard let document, let amount = document["amountMl"]?.int64Value,
                  let source = document["source"]?.stringValue else { return nil }
            return Value(amountMl: Int(amount), source: source)
        }

        func push(_ d: Device) throws {
            guard !d.outbox.isEmpty else { return }
            let batch = d.outbox
            d.outbox = []
            let r = try server.request("POST", "/v1/sync", json: .object([("mutations", .array(batch.map(data)))]),
                                       token: user.token, headers: [("X-Device-ID", d.id)])
            guard r.status == 200, case .array(let results)? = r.json?["results"], results.count == batch.count else {
                throw TestFailure("\(context): push failed \(r.status) \(r.text)")
            }
            for (m, result) in zip(batch, results) {
                let index = arrivals.count
                arrivals.append(m)
                let expected = wins(m, index, over: oracle[m.id])
                if !expected { superseded += 1 }
                if expected { oracle[m.id] = (m, index) }
                let status = result["status"]?.stringValue ?? ""
                XCTAssertEqual(status, expected ? "applied" : "superseded",
                               "\(context): mutation #\(index) \(m.id) from \(d.name) at \(m.clock)")
                if status == "applied" {
                    d.local[m.id] = m.value
                } else if status == "superseded" {
                    d.local[m.id] = value(of: result["current"])
                }
            }
        }

        func pull(_ d: Device) throws {
            var more = true
            while more {
                var path = "/v1/sync?limit=\(1 + rng.int(20))"
                if let token = d.token { path += "&since=\(token)" }
                let r = try server.request("GET", path, token: user.token, headers: [("X-Device-ID", d.id)])
                guard r.status == 200, let json = r.json, case .array(let changes)? = json["changes"],
                      let token = json["nextToken"]?.stringValue else {
                    throw TestFailure("\(context): pull failed \(r.status) \(r.text)")
                }
                for change in changes where change["collection"]?.stringValue == "water_entries" {
                    guard let id = change["id"]?.stringValue else { continue }
                    d.local[id] = change["deleted"] == .bool(true) ? nil : value(of: change["data"])
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
            switch rng.int(10) {
            case 0...2:
                let id = UUID().uuidString.lowercased()
                known.append(id)
                let m = Mutation(id: id, value: Value(amountMl: 50 + rng.int(950), source: d.name), clock: clock, device: d.id)
                d.local[id] = m.value
                d.outbox.append(m)
                mutations += 1
            case 3...4:
                let live = d.local.keys.sorted()
                guard !live.isEmpty else { continue }
                let id = rng.chance(0.8) ? live[rng.int(live.count)] : known[rng.int(known.count)]
                let m = Mutation(id: id, value: Value(amountMl: 50 + rng.int(950), source: d.name), clock: clock, device: d.id)
                d.local[id] = m.value
                d.outbox.append(m)
                mutations += 1
            case 5:
                let live = d.local.keys.sorted()
                guard !live.isEmpty else { continue }
                let m = Mutation(id: live[rng.int(live.count)], value: nil, clock: clock, device: d.id)
                d.local[m.id] = nil
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

        let expected = oracle.compactMapValues { $0.winner.value }
        var serverState: [String: Value] = [:]
        var token: String?
        repeat {
            let path = "/v1/sync?limit=1000" + (token.map { "&since=\($0)" } ?? "")
            let r = try server.request("GET", path, token: user.token)
            guard case .array(let changes)? = r.json?["changes"] else { throw TestFailure("\(context): snapshot failed") }
            for change in changes where change["collection"]?.stringValue == "water_entries" {
                guard let id = change["id"]?.stringValue else { continue }
                serverState[id] = change["deleted"] == .bool(true) ? nil : value(of: change["data"])
            }
            token = r.json?["hasMore"] == .bool(true) ? r.json?["nextToken"]?.stringValue : nil
        } while token != nil
        XCTAssertEqual(serverState, expected, "\(context): server != oracle")
        for d in devices {
            XCTAssertEqual(d.local, expected, "\(context): \(d.name) != oracle")
        }
        XCTAssertGreaterThan(arrivals.count, 200, context)
        XCTAssertGreaterThan(superseded, 0, "\(context): the schedule produced no conflict")
    }
}

/// RFC 3339 with milliseconds, UTC, from ms since the epoch.
func rfc3339ms(_ ms: Int64) -> String {
    RFC3339.format(ms)
}
