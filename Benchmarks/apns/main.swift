// apns-bench: pushes per second from SuplashAPNs to the mock APNs server over one HTTP/2
// connection. By hand, not in CI (see Benchmarks/apns/README.md):
//   scripts/with-apns-mock swift run -c release apns-bench 100000 200
// Arguments: total pushes (default 10000), pushes in flight (default 100). Reads the mock's
// mock.json from $SUPLASH_TEST_APNS_MOCK. APNS_BENCH_URL sends to another origin instead (e.g.
// nghttpd with the mock's certificate, to see the client's own ceiling); APNS_BENCH_STALE_PERCENT
// sends that share to stale tokens.
import Foundation
import SuplashAPNs
import SuplashCrypto
import SuplashHTTPClient
import SuplashJSON
import SuplashLogging

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

/// Peak resident set size of this process, KiB (`VmHWM` in /proc/self/status).
func peakRSSKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
    }
    return -1
}

let arguments = CommandLine.arguments
let total = arguments.count > 1 ? Int(arguments[1]) ?? 10_000 : 10_000
let inFlight = arguments.count > 2 ? Int(arguments[2]) ?? 100 : 100
guard let dir = ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"],
      let infoBytes = FileManager.default.contents(atPath: dir + "/mock.json"),
      let info = try? JSONParser.parse(Array(infoBytes)) else { fail("SUPLASH_TEST_APNS_MOCK does not name a running mock") }
guard let port = info["productionPort"]?.int64Value, let sandboxPort = info["sandboxPort"]?.int64Value,
      let caFile = info["caFile"]?.stringValue, let keyFile = info["keyFile"]?.stringValue,
      let keyID = info["keyId"]?.stringValue, let teamID = info["teamId"]?.stringValue,
      let bundleID = info["bundleIds"]?.arrayValue?.first?.stringValue,
      let pem = FileManager.default.contents(atPath: keyFile) else { fail("mock.json is incomplete") }

do {
    let key = try ES256PrivateKey(pem: Array(pem))
    let client = try HTTPClient(configuration: HTTPClientConfiguration(caFile: caFile, maxConcurrentStreams: inFlight))
    let sender = APNsSender(client: client, providerToken: APNsProviderToken(key: key, keyID: keyID, teamID: teamID),
                            configuration: APNsSenderConfiguration(productionURL: ProcessInfo.processInfo.environment["APNS_BENCH_URL"]
                                                                       ?? "https://127.0.0.1:\(port)",
                                                                   sandboxURL: "https://127.0.0.1:\(sandboxPort)",
                                                                   maxConcurrentPushes: inFlight),
                            logger: Logger(minimumLevel: .warning))
    let payload = Array(#"{"aps":{"content-available":1},"position":"1234567"}"#.utf8)
    // APNS_BENCH_STALE_PERCENT: that share of pushes goes to stale tokens (the mock answers 410).
    let stalePercent = Int(ProcessInfo.processInfo.environment["APNS_BENCH_STALE_PERCENT"] ?? "0") ?? 0
    let staleToken = "0410" + String(repeating: "ab", count: 30)
    func pushes(_ count: Int) -> [APNsPush] {
        (0..<count).map { index in
            APNsPush(id: UUID(), deviceToken: index % 100 < stalePercent ? staleToken : String(repeating: "ab", count: 32),
                     pushType: .background, bundleID: bundleID,
                     environment: .production, payload: payload, expiration: 0, collapseID: "sync")
        }
    }
    // Warm-up: the connection, TLS, the provider token.
    _ = await sender.send(pushes(min(1000, total)))

    let batch = 10_000
    var sent = 0
    var other = 0
    var batchSeconds: [Double] = []
    let start = ContinuousClock.now
    var remaining = total
    while remaining > 0 {
        let count = min(batch, remaining)
        let work = pushes(count)
        let batchStart = ContinuousClock.now
        let results = await sender.send(work)
        let elapsed = ContinuousClock.now - batchStart
        batchSeconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        for result in results {
            if case .sent = result.outcome { sent += 1 } else { other += 1 }
        }
        remaining -= count
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    await client.shutdown()
    print(String(format: "pushes=%d in_flight=%d sent=%d other=%d seconds=%.2f pushes_per_s=%.0f peak_rss_mib=%.1f",
                 total, inFlight, sent, other, seconds, Double(total) / seconds, Double(peakRSSKiB()) / 1024))
    print("batch_seconds=" + batchSeconds.map { String(format: "%.2f", $0) }.joined(separator: ","))
} catch {
    fail("bench failed: \(error)")
}
