import Foundation

/// Prometheus text-format metrics (spec §7 `GET /metrics`): requests by route template,
/// method and status; a latency histogram by route template; gauges read at scrape time.
public final class Metrics: @unchecked Sendable {
    /// Histogram bucket upper bounds in seconds.
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.buckets.count)
        var count: UInt64 = 0
        var sum: Double = 0
    }

    /// One route template's figures: requests by (method, status) — a handful per route, so a
    /// short array — and the latency histogram. One dictionary look-up per request.
    private struct RouteFigures {
        var requests: [(method: String, status: Int, count: UInt64)] = []
        var latency = Histogram()

        mutating func record(method: String, status: Int, seconds: Double) {
            if let i = requests.firstIndex(where: { $0.status == status && $0.method == method }) {
                requests[i].count += 1
            } else {
                requests.append((method, status, 1))
            }
            var i = Metrics.buckets.count - 1
            while i >= 0 && seconds <= Metrics.buckets[i] {
                latency.counts[i] += 1
                i -= 1
            }
            latency.count += 1
            latency.sum += seconds
        }
    }

    // Guarded by `lock`.
    private var routes: [String: RouteFigures] = [:]
    private var gauges: [(name: String, help: String, read: @Sendable () -> Double)] = []
    private var counters: [(name: String, help: String, read: @Sendable () -> Int)] = []
    private var counterFamilies:
        [(
            name: String, help: String, label: String,
            read: @Sendable () -> [(String, Double)]
        )] = []
    private let lock = NSLock()

    public init() {}

    /// Counts one answered request; `seconds` is the time from routing to sending.
    public func record(route: String, method: String, status: Int, seconds: Double) {
        lock.withLock {
            // Mutated in place through the dictionary's `_modify` accessor: no copy of the histogram.
            routes[route, default: RouteFigures()].record(method: method, status: status, seconds: seconds)
        }
    }

    /// Registers a gauge read at every scrape (open connections, writer queue depth…).
    public func gauge(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        lock.withLock { gauges.append((name, help, read)) }
    }

    /// Registers a single counter (no labels) read at every scrape, e.g. log lines dropped.
    /// `read` must be monotonic (Prometheus counter semantics).
    public func counter(_ name: String, help: String, _ read: @escaping @Sendable () -> Int) {
        lock.withLock { counters.append((name, help, read)) }
    }

    /// Registers a family of counters read at every scrape, one series per value of `label`
    /// (e.g. storage failures by kind). `read` returns (label value, count) pairs; label values
    /// must be code-defined (never user text).
    public func counters(
        _ name: String, help: String, label: String,
        _ read: @escaping @Sendable () -> [(String, Double)]
    ) {
        lock.withLock { counterFamilies.append((name, help, label, read)) }
    }

    /// The exposition text (version 0.0.4).
    public func render() -> String {
        let (routes, gauges, families, counters) = lock.withLock {
            (self.routes, self.gauges, self.counterFamilies, self.counters)
        }
        let requests = routes.flatMap { route, figures in
            figures.requests.map { (route: route, method: $0.method, status: $0.status, count: $0.count) }
        }
        let latency = routes.mapValues(\.latency)
        var out = "# HELP suplash_http_requests_total Requests answered, by route template, method and status.\n"
        out += "# TYPE suplash_http_requests_total counter\n"
        for key in requests.sorted(by: { ($0.route, $0.method, $0.status) < ($1.route, $1.method, $1.status) }) {
            out += "suplash_http_requests_total{route=\"\(key.route)\",method=\"\(key.method)\",status=\"\(key.status)\"} \(key.count)\n"
        }
        out += "# HELP suplash_http_request_duration_seconds Time from routing to sending the response.\n"
        out += "# TYPE suplash_http_request_duration_seconds histogram\n"
        for (route, h) in latency.sorted(by: { $0.key < $1.key }) {
            for (i, bound) in Metrics.buckets.enumerated() {
                out += "suplash_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(h.counts[i])\n"
            }
            out += "suplash_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(h.count)\n"
            out += "suplash_http_request_duration_seconds_sum{route=\"\(route)\"} \(h.sum)\n"
            out += "suplash_http_request_duration_seconds_count{route=\"\(route)\"} \(h.count)\n"
        }
        for g in gauges {
            out += "# HELP \(g.name) \(g.help)\n# TYPE \(g.name) gauge\n\(g.name) \(g.read())\n"
        }
        for c in counters {
            out += "# HELP \(c.name) \(c.help)\n# TYPE \(c.name) counter\n\(c.name) \(c.read())\n"
        }
        for family in families {
            out += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) counter\n"
            for (value, count) in family.read() {
                out += "\(family.name){\(family.label)=\"\(value)\"} \(count)\n"
            }
        }
        return out
    }
}
