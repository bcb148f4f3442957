import CPostgreSQL
import SuplashSQL

/// One row of a result: values by column index or name, decoded by column type.
///
/// `int2`/`int4`/`int8`/`bool` → `.integer` (`bool` as 1/0, like SQLite), `float4`/`float8`/
/// `numeric` → `.real`, `bytea` → `.blob`, everything else → `.text`; SQL `NULL` → `.null`.
public struct PostgresRow: Sendable, SQLRowValues {
    let columns: [String]
    let values: [SQLValue]

    /// The value of column `index` (0-based); `.null` when out of range.
    public subscript(_ index: Int) -> SQLValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The value of the column called `name` (the first one), or `.null` when absent.
    public subscript(_ name: String) -> SQLValue {
        columns.firstIndex(of: name).map { values[$0] } ?? .null
    }
}

/// One statement with its parameters, for `PostgresConnection.pipeline` and `enqueue`.
public struct PostgresStatement: Sendable {
    /// The SQL text (prepared once per connection), with `$1`, `$2`, … placeholders.
    public let sql: String
    /// The values bound to the placeholders.
    public let args: [SQLValue]
    /// False for transaction control (`BEGIN …`, `COMMIT`) and one-off statements: sent
    /// unnamed (parsed and planned each time, not kept in the connection's statement cache).
    let prepare: Bool

    /// A statement with `args` bound to `$1`, `$2`, ….
    public init(_ sql: String, _ args: [SQLValue] = []) {
        self.sql = sql
        self.args = args
        prepare = true
    }

    init(control sql: String) {
        self.sql = sql
        args = []
        prepare = false
    }

    /// A statement sent unnamed (not prepared): for SQL whose text varies so much that
    /// caching each variant would only grow the server's memory.
    public init(unnamed sql: String, _ args: [SQLValue]) {
        self.sql = sql
        self.args = args
        prepare = false
    }
}

/// One libpq connection (`PGconn`), used by one thread at a time.
///
/// Statements are prepared once per connection (named `s1`, `s2`, … by SQL text) and run
/// with `PQexecPrepared`: parameters are always passed separately from the SQL — integers,
/// reals and text in text format (text containing U+0000 is refused with
/// `.invalidParameter`), bytea in binary format (bytes sent as is). Parameter types are
/// inferred by the server from the statement; write `$1::bigint` where it cannot infer one.
///
/// **Round trips.** Every client↔server exchange is one round trip (`roundTrips` counts
/// them). Statements whose result the caller does not need can be queued (`enqueue`): they
/// travel with the next statement that needs a result, in one libpq pipeline
/// (`PQenterPipelineMode`, libpq ≥ 14), and run on the server in the order they were
/// queued, each exactly as if it had been sent alone. `pipeline` sends several statements
/// whose results are needed in one round trip the same way. In a pipeline the server stops
/// at the first failing statement (the rest are skipped) and that error is thrown by the
/// call that sent it — for a queued statement, by the later call that carried it.
///
/// `@unchecked Sendable`: a connection is only ever used by the thread that checked it out
/// of `PostgresPool` (the pool's lock guards the hand-over); it is never shared.
public final class PostgresConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private var prepared: [String: String] = [:]
    private var closed = false
    private var broken = false
    private var queued: [PostgresStatement] = []
    /// How many round trips this connection has made (statements, pipelines, preparations).
    public private(set) var roundTrips = 0

    /// Connects with a libpq connection string or URL, e.g.
    /// `postgresql:///suplash?host=/run/postgresql` (Unix socket) or
    /// `postgresql://user@127.0.0.1:5432/suplash`. The session uses UTF-8 and UTC.
    /// - Throws: `PostgresError` `.connectionFailure`.
    public init(url: String) throws {
        guard let conn = PQconnectdb(url) else {
            throw PostgresError(kind: .connectionFailure, message: "PQconnectdb returned NULL")
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(conn))
            PQfinish(conn)
            throw PostgresError(kind: .connectionFailure, message: message)
        }
        handle = conn
        try execute("SET client_encoding = 'UTF8'; SET TIME ZONE 'UTC'; SET client_min_messages = warning")
    }

    deinit {
        if !closed { PQfinish(handle) }
    }

    /// Closes the connection (idempotent).
    public func close() {
        guard !closed else { return }
        closed = true
        PQfinish(handle)
    }

    /// False once the server connection is lost; the pool then drops the connection.
    public var isHealthy: Bool { !closed && !broken && PQstatus(handle) == CONNECTION_OK }

    /// True while statements are queued (`enqueue`) and not yet sent.
    public var hasQueued: Bool { !queued.isEmpty }

    /// True inside a transaction block (also an aborted one).
    public var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// Runs parameterless SQL, possibly several `;`-separated statements (`PQexec`): for
    /// transaction control and migration scripts only — never for SQL containing data.
    /// - Throws: `PostgresError`.
    public func execute(_ sql: String) throws {
        try flushQueued()
        roundTrips += 1
        guard let result = PQexec(handle, sql) else { throw lostConnection() }
        defer { PQclear(result) }
        try check(result)
    }

    /// Runs one statement with `args` bound to `$1`, `$2`, … and returns its rows.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func query(_ sql: String, _ args: [SQLValue] = []) throws -> [PostgresRow] {
        let result = try run(sql, args)
        defer { PQclear(result) }
        return try rows(of: result)
    }

    /// Runs one statement with `args` and returns how many rows it changed.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func update(_ sql: String, _ args: [SQLValue] = []) throws -> Int {
        let result = try run(sql, args)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// Queues a statement whose result is not needed: it is sent with the next statement
    /// that needs one (`query`, `update`, `execute`, `pipeline`), before it and in queue
    /// order — the same effect as running it now, one round trip fewer. Its failure is
    /// thrown by that later call.
    public func enqueue(_ sql: String, _ args: [SQLValue] = []) {
        queued.append(PostgresStatement(sql, args))
    }

    /// Queues transaction control without parameters (`BEGIN …`), sent like `enqueue`.
    func enqueueControl(_ sql: String) {
        queued.append(PostgresStatement(control: sql))
    }

    /// Drops the queued statements unsent (after a failure, before `ROLLBACK`).
    public func discardQueued() {
        queued.removeAll()
    }

    /// Sends the queued statements now (one round trip; nothing when the queue is empty).
    /// - Throws: `PostgresError` of the first failing one.
    public func flushQueued() throws {
        guard !queued.isEmpty else { return }
        for result in try send([]) { PQclear(result) }
    }

    /// Runs the queued statements and then `statements` in one round trip (a libpq
    /// pipeline) and returns the rows of each of `statements`, in order. The server runs
    /// them one after the other, each as if sent alone (at READ COMMITTED each takes its
    /// snapshot when it starts, after the previous one finished, lock waits included).
    /// - Throws: `PostgresError` of the first failing statement (the later ones did not run).
    public func pipeline(_ statements: [PostgresStatement]) throws -> [[PostgresRow]] {
        let results = try send(statements)
        defer { for result in results { PQclear(result) } }
        return try results.map(rows(of:))
    }

    /// Prepares the queued statements and `statements` that are not prepared yet (a round
    /// trip each, once per connection), so that a later `pipeline` of them is one round trip.
    /// - Throws: `PostgresError`.
    func prepare(_ statements: [PostgresStatement]) throws {
        for statement in queued + statements where statement.prepare { _ = try statementName(statement.sql) }
    }

    // MARK: - Internals

    /// Sends `queued + statements` in one pipeline; returns the results of `statements`
    /// (the caller clears them). Empties the queue whatever happens.
    private func send(_ statements: [PostgresStatement]) throws -> [OpaquePointer] {
        let all = queued + statements
        queued.removeAll()
        if all.count == 1, let only = all.first, only.prepare { return [try run(only.sql, only.args)] }
        for statement in all {
            for case .text(let text) in statement.args where text.utf8.contains(0) {
                throw PostgresError(kind: .invalidParameter, message: "text parameter contains U+0000")
            }
        }
        let names = try all.map { $0.prepare ? try statementName($0.sql) : "" }
        roundTrips += 1
        guard PQenterPipelineMode(handle) == 1 else { throw lostConnection() }
        for (statement, name) in zip(all, names) {
            let sent: Int32
            do {
                sent = try withParameters(statement.args) { values, lengths, formats in
                    statement.prepare
                        ? PQsendQueryPrepared(handle, name, Int32(statement.args.count), values, lengths, formats, 0)
                        : PQsendQueryParams(
                            handle, statement.sql, Int32(statement.args.count), nil, values, lengths,
                            formats, 0)
                }
            } catch {
                broken = true  // half a pipeline was sent: the connection is not reusable
                throw error
            }
            guard sent == 1 else {
                broken = true
                throw lostConnection()
            }
        }
        guard PQpipelineSync(handle) == 1 else {
            broken = true
            throw lostConnection()
        }
        var results: [OpaquePointer] = []
        var failure: Error?
        for index in all.indices {
            var first: OpaquePointer?
            while let result = PQgetResult(handle) {
                if first == nil { first = result } else { PQclear(result) }
            }
            guard let result = first else {
                broken = true
                for result in results { PQclear(result) }
                throw failure ?? lostConnection()
            }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
                continue
            }
            do {
                try check(result)
            } catch {
                if failure == nil { failure = error }
                PQclear(result)
                continue
            }
            if index >= all.count - statements.count { results.append(result) } else { PQclear(result) }
        }
        guard let sync = PQgetResult(handle), PQresultStatus(sync) == PGRES_PIPELINE_SYNC else {
            broken = true
            for result in results { PQclear(result) }
            throw failure ?? lostConnection()
        }
        PQclear(sync)
        if PQexitPipelineMode(handle) != 1 { broken = true }
        if let failure {
            for result in results { PQclear(result) }
            throw failure
        }
        return results
    }

    private func statementName(_ sql: String) throws -> String {
        if let name = prepared[sql] { return name }
        let name = "s\(prepared.count + 1)"
        roundTrips += 1
        guard let result = PQprepare(handle, name, sql, 0, nil) else { throw lostConnection() }
        defer { PQclear(result) }
        try check(result)
        prepared[sql] = name
        return name
    }

    private func run(_ sql: String, _ args: [SQLValue]) throws -> OpaquePointer {
        if !queued.isEmpty {
            guard let result = try send([PostgresStatement(sql, args)]).first else { throw lostConnection() }
            return result
        }
        let name = try statementName(sql)
        roundTrips += 1
        let result: OpaquePointer? = try withParameters(args) { values, lengths, formats in
            PQexecPrepared(handle, name, Int32(args.count), values, lengths, formats, 0)
        }
        guard let result else { throw lostConnection() }
        do {
            try check(result)
        } catch {
            PQclear(result)
            throw error
        }
        return result
    }

    /// Calls `body` with libpq's parameter arrays for `args` (valid only during the call).
    private func withParameters<R>(
        _ args: [SQLValue],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, [Int32], [Int32]) throws -> R
    ) throws -> R {
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for buffer in buffers { buffer?.deallocate() } }
        for arg in args {
            let bytes: [UInt8]?
            let format: Int32
            switch arg {
            case .null:
                bytes = nil
                format = 0
            case .integer(let i):
                bytes = Array(String(i).utf8) + [0]
                format = 0
            case .real(let d):
                bytes = Array(Self.floatText(d).utf8) + [0]
                format = 0
            case .text(let s):
                // Text format, so any parameter type the server inferred (text, uuid,
                // regclass, jsonb, …) parses it; PostgreSQL text cannot hold U+0000, so
                // such a string is refused here rather than silently cut at the NUL.
                guard !s.utf8.contains(0) else {
                    throw PostgresError(kind: .invalidParameter, message: "text parameter contains U+0000")
                }
                bytes = Array(s.utf8) + [0]
                format = 0
            case .blob(let b):
                bytes = b
                format = 1
            }
            if let bytes {
                let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
                bytes.withUnsafeBufferPointer { source in
                    source.withMemoryRebound(to: CChar.self) { chars in
                        if let base = chars.baseAddress { buffer.update(from: base, count: bytes.count) }
                    }
                }
                buffers.append(buffer)
                lengths.append(Int32(bytes.count))
            } else {
                buffers.append(nil)
                lengths.append(0)
            }
            formats.append(format)
        }
        return try buffers.withUnsafeBufferPointer { values in
            try values.withMemoryRebound(to: UnsafePointer<CChar>?.self) { constValues in
                try body(constValues.baseAddress, lengths, formats)
            }
        }
    }

    static func floatText(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return "\(d)"
    }

    private func check(_ result: OpaquePointer) throws {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = String(cString: PQresultErrorMessage(result))
            if state.isEmpty && PQstatus(handle) != CONNECTION_OK {
                throw PostgresError(kind: .connectionFailure, message: message)
            }
            throw PostgresError(sqlState: state, message: message)
        }
    }

    private func lostConnection() -> PostgresError {
        PostgresError(kind: .connectionFailure, message: String(cString: PQerrorMessage(handle)))
    }

    private func rows(of result: OpaquePointer) throws -> [PostgresRow] {
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        let names = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        var out: [PostgresRow] = []
        out.reserveCapacity(Int(rowCount))
        for r in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for c in 0..<columnCount {
                if PQgetisnull(result, r, c) == 1 {
                    values.append(.null)
                    continue
                }
                let text = String(cString: PQgetvalue(result, r, c))
                values.append(try Self.decode(text, type: types[Int(c)]))
            }
            out.append(PostgresRow(columns: names, values: values))
        }
        return out
    }

    /// Type OIDs (`pg_type.dat`).
    enum TypeOID {
        static let bool: Oid = 16, bytea: Oid = 17, int8: Oid = 20, int2: Oid = 21, int4: Oid = 23
        static let float4: Oid = 700, float8: Oid = 701, numeric: Oid = 1700
    }

    static func decode(_ text: String, type: Oid) throws -> SQLValue {
        switch type {
        case TypeOID.int8, TypeOID.int4, TypeOID.int2:
            guard let i = Int64(text) else { throw PostgresError(kind: .decoding, message: "integer column") }
            return .integer(i)
        case TypeOID.bool:
            return .integer(text == "t" ? 1 : 0)
        case TypeOID.float4, TypeOID.float8, TypeOID.numeric:
            switch text {
            case "NaN": return .real(.nan)
            case "Infinity": return .real(.infinity)
            case "-Infinity": return .real(-.infinity)
            default:
                guard let d = Double(text) else { throw PostgresError(kind: .decoding, message: "float column") }
                return .real(d)
            }
        case TypeOID.bytea:
            guard let bytes = decodeHexBytea(text) else { throw PostgresError(kind: .decoding, message: "bytea column") }
            return .blob(bytes)
        default:
            return .text(text)
        }
    }

    /// `\x0a1b…` (the default `bytea_output = hex`) → bytes.
    static func decodeHexBytea(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return nil
        }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity((utf8.count - 2) / 2)
        var i = 2
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
