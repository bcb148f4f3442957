import Foundation
import SuplashJSON
import XCTest

/// Starts the real `suplash-server` executable (built next to the test bundle) on port 0
/// with a fresh data dir, and talks HTTP/1.1 to it over plain sockets.
final class TestServer: @unchecked Sendable {
    let process: Process
    let dataDir: String
    let port: Int
    let stderrPath: String

    /// The built executable: `.build/<config>/suplash-server`, beside the test bundle.
    static var executable: String {
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        for _ in 0..<4 {
            dir = dir.deletingLastPathComponent()
            let candidate = dir.appendingPathComponent("suplash-server").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/suplash-server"
    }

    /// The package root (for `Migrations/` and `config/`).
    static var packageRoot: String {
        var dir = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { dir = dir.deletingLastPathComponent() }
        return dir.path
    }

    /// A new sealing key file (`security.sealingKeyFile`: 32 random bytes, mode 0600) in a
    /// fresh directory: push tokens are kept only with one.
    static func makeSealingKeyFile() -> String {
        let path = makeDataDir() + "/sealing.key"
        _ = FileManager.default.createFile(
            atPath: path, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }), attributes: [.posixPermissions: 0o600])
        return path
    }

    static func makeDataDir() -> String {
        let path = NSTemporaryDirectory() + "suplash-test-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs a CLI command to completion; returns (exit status, stdout, stderr).
    @discardableResult
    static func runCLI(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String, String) {
        try run(executable, arguments, environment: environment)
    }

    /// Runs `tool` with `arguments` to completion in the package root (environment: this
    /// process's, overridden by `environment`); returns (exit status, stdout, stderr).
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: packageRoot)
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    init(dataDir: String? = nil, environment: [String: String] = [:]) throws {
        self.dataDir = dataDir ?? TestServer.makeDataDir()
        stderrPath = self.dataDir + "/server.stderr"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.executable)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.dataDir]
        process.currentDirectoryURL = URL(fileURLWithPath: TestServer.packageRoot)
        var env = ProcessInfo.processInfo.environment
        env["SUPLASH_AUTH_ARGON2_MEMORY_KIB"] = "8192"
        env["SUPLASH_AUTH_ARGON2_ITERATIONS"] = "1"
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        // Wait for "listening on http://127.0.0.1:PORT".
        var line = Data()
        let handle = out.fileHandleForReading
        while !line.contains(0x0A) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "listening on http://127.0.0.1:"),
            let port = Int(text[range.upperBound...].prefix(while: { $0.isNumber }))
        else {
            process.terminate()
            throw TestFailure("server did not start: \(text)")
        }
        self.port = port
    }

    /// SIGTERM, then waits; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var serverLog: String {
        (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// A parsed HTTP response.
struct TestResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first(where: { $0.0.lowercased() == name.lowercased() })?.1
    }

    var json: JSONValue? { try? JSONParser.parse(body) }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Minimal blocking HTTP/1.1 client over a POSIX socket (one request per connection
/// unless `raw` is used).
enum HTTPTestClient {
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw TestFailure("connect")
        }
        var tv = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends `bytes`, reads until the peer closes (or the 15 s timeout).
    static func raw(port: Int, _ bytes: [UInt8]) throws -> [UInt8] {
        let fd = try connect(port: port)
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return out
    }

    /// One request with `Connection: close`.
    static func request(
        port: Int, _ method: String, _ path: String, json: JSONValue? = nil, body: [UInt8]? = nil,
        headers: [(String, String)] = []
    ) throws -> TestResponse {
        var payload = body ?? []
        var allHeaders = headers
        if let json {
            payload = json.serialized()
            allHeaders.append(("Content-Type", "application/json"))
        }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
        for (n, v) in allHeaders { head += "\(n): \(v)\r\n" }
        if !payload.isEmpty || ["POST", "PATCH", "PUT"].contains(method) { head += "Content-Length: \(payload.count)\r\n" }
        head += "\r\n"
        let bytes = try raw(port: port, Array(head.utf8) + payload)
        guard let response = parse(bytes).first else { throw TestFailure("no response to \(method) \(path)") }
        return response
    }

    /// Splits a byte stream into responses (Content-Length framed).
    static func parse(_ bytes: [UInt8]) -> [TestResponse] {
        var responses: [TestResponse] = []
        var rest = bytes[...]
        let separator: [UInt8] = [13, 10, 13, 10]
        while let end = rest.firstRange(of: separator) {
            let headText = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self)
            var lines = headText.components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst()
            let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
            var headers: [(String, String)] = []
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            let length = Int(headers.first(where: { $0.0.lowercased() == "content-length" })?.1 ?? "0") ?? 0
            let bodyStart = end.upperBound
            let bodyEnd = min(rest.endIndex, bodyStart + length)
            responses.append(TestResponse(status: status, headers: headers, body: Array(rest[bodyStart..<bodyEnd])))
            rest = rest[bodyEnd...]
        }
        return responses
    }
}

extension TestServer {
    func request(
        _ method: String, _ path: String, json: JSONValue? = nil, body: [UInt8]? = nil, token: String? = nil,
        headers: [(String, String)] = []
    ) throws -> TestResponse {
        var h = headers
        if let token { h.append(("Authorization", "Bearer \(token)")) }
        return try HTTPTestClient.request(port: port, method, path, json: json, body: body, headers: h)
    }

    /// Signs up a fresh user; returns (user id, access token, refresh token, email).
    func signUp(password: String = "correct horse battery") throws -> (id: String, token: String, refresh: String, email: String) {
        let email = "u\(UUID().uuidString.prefix(8).lowercased())@example.test"
        let r = try request("POST", "/v1/auth/signup", json: ["email": .string(email), "password": .string(password)])
        guard r.status == 201, let json = r.json, let id = json["user"]?["id"]?.stringValue,
            let token = json["session"]?["accessToken"]?.stringValue,
            let refresh = json["session"]?["refreshToken"]?.stringValue
        else {
            throw TestFailure("signup failed: \(r.status) \(r.text)")
        }
        return (id, token, refresh, email)
    }
}

/// Milliseconds-precision RFC 3339 of a Date.
func rfc3339(_ date: Date) -> String {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f.string(from: date)
}

/// Sync helpers shared by the sync API tests (spec §5).
extension TestServer {
    /// The `X-Device-ID` of `push` when none is given.
    static let syncDevice = UUID().uuidString

    /// Pulls the feed from `since` (nil: from the start) until `hasMore` is false.
    /// - Returns: every change in order and the last `nextToken`.
    /// - Throws: `TestFailure` on a non-200 answer or a body without `changes`/`nextToken`.
    func pullAll(token: String, since: String? = nil) throws -> ([JSONValue], String) {
        var all: [JSONValue] = []
        var since = since
        while true {
            let r = try request("GET", "/v1/sync" + (since.map { "?since=\($0)" } ?? ""), token: token)
            guard r.status == 200, case .array(let changes)? = r.json?["changes"],
                let next = r.json?["nextToken"]?.stringValue
            else { throw TestFailure("pull: \(r.status) \(r.text)") }
            all += changes
            since = next
            if r.json?["hasMore"] != .bool(true) { return (all, next) }
        }
    }

    /// Pushes `mutations` as `device` (`X-Device-ID`) and checks the answer carries a `nextToken`.
    /// - Returns: the per-mutation `results`.
    /// - Throws: `TestFailure` on a non-200 answer or a body without `results`.
    func push(token: String, _ mutations: [JSONValue], device: String = syncDevice) throws -> [JSONValue] {
        let r = try request(
            "POST", "/v1/sync", json: .object([("mutations", .array(mutations))]), token: token,
            headers: [("X-Device-ID", device)])
        guard r.status == 200, case .array(let results)? = r.json?["results"] else {
            throw TestFailure("push: \(r.status) \(r.text)")
        }
        XCTAssertNotNil(r.json?["nextToken"]?.stringValue)
        return results
    }
}
