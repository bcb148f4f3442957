import Foundation

/// Prometheus text-format metrics (spec §7 `GET /metrics`): requests by route template,
/// method and status; a latency histogram by route template; gauges read at scrape time.
public final class Metrics: @unchecked Sendable {
    /// Histogram bucket upper bounds in seconds.
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.buckets.count)
        var count: UInt64 = 0
        var sum: Double = 0
    }

    // Guarded by `lock`.
    private var requests: [RequestKey: UInt64] = [:]
    private var latency: [String: Histogram] = [:]
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
            requests[RequestKey(route: route, method: method, status: status), default: 0] += 1
            var h = latency[route] ?? Histogram()
            for (i, bound) in Metrics.buckets.enumerated() where seconds <= bound { h.counts[i] += 1 }
            h.count += 1
            h.sum += seconds
            latency[route] = h
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
        let (requests, latency, gauges, families, counters) = lock.withLock {
            (self.requests, self.latency, self.gauges, self.counterFamilies, self.counters)
        }
        var out = "# HELP suplash_http_requests_total Requests answered, by route template, method and status.\n"
        out += "# TYPE suplash_http_requests_total counter\n"
        for (key, n) in requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            out += "suplash_http_requests_total{route=\"\(key.route)\",method=\"\(key.method)\",status=\"\(key.status)\"} \(n)\n"
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
