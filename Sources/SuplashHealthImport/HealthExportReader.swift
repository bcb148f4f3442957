import CArchive
import CLibXML2
import Foundation
import SuplashCrypto
import SuplashKit

/// One `HKQuantityTypeIdentifierDietaryWater` record of an Apple Health export, converted.
public struct HealthWaterSample: Sendable, Hashable {
    public var sourceName: String
    /// `startDate` as an instant (the export writes local time with its offset).
    public var start: Date
    /// The volume in whole millilitres (rounded half away from zero).
    public var amountMl: Int
    /// UUIDv5 of (sourceName, startDate, endDate, value, unit) exactly as written in the file.
    public var dedupeKey: String

    /// The entry sent to the server: `source: healthkit`, the dedupe key as `healthKitUUID`.
    public var entry: WaterEntry {
        WaterEntry(id: dedupeKey, amountMl: amountMl, loggedAt: start, source: .healthkit, healthKitUUID: dedupeKey)
    }
}

/// What a read of an export found.
public struct HealthExportCounts: Sendable, Hashable {
    /// Every `<Record>` element (all types).
    public var records = 0
    /// Dietary-water records among them.
    public var waterRecords = 0
    /// Water records written by Suplash itself (skipped unless asked for).
    public var skippedOwn = 0
    /// Water records with a bad date, value or unit, or a volume outside 1–5000 ml.
    public var malformed = 0
    /// XML errors libxml2 recovered from.
    public var xmlErrors = 0
    /// Bytes of XML read.
    public var bytes: Int64 = 0
}

/// Errors opening an export.
public enum HealthExportError: Error, Sendable, CustomStringConvertible {
    case cannotOpen(String)
    case noExportInArchive(String)
    case archive(String)
    case notXML(String)

    public var description: String {
        switch self {
        case .cannotOpen(let p): "cannot open \(p)"
        case .noExportInArchive(let p): "\(p) holds no apple_health_export/export.xml"
        case .archive(let why): "zip: \(why)"
        case .notXML(let why): "not an Apple Health export: \(why)"
        }
    }
}

/// Streams an Apple Health `export.xml` (or the `export.zip` the Health app writes) in
/// constant memory: libxml2's SAX push parser fed 256 KiB at a time, from the file or from
/// libarchive's zip reader. No DTD or external entity is loaded.
public final class HealthExportReader {
    public static let sourceNameOfSuplash = "Suplash"
    private let path: String
    private let includeOwn: Bool
    private var source: ByteSource?
    fileprivate var state = ParserState()

    public init(path: String, includeOwnRecords: Bool = false) {
        self.path = path
        self.includeOwn = includeOwnRecords
    }

    public var counts: HealthExportCounts { state.counts }

    /// Reads the whole export; `onSamples` gets the samples found in each chunk, in file order.
    public func read(_ onSamples: ([HealthWaterSample]) async throws -> Void) async throws {
        let input = try openSource()
        state = ParserState()
        state.includeOwn = includeOwn
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { context, localname, _, _, _, _, attributeCount, _, attributes in
            guard let context, let localname else { return }
            let state = Unmanaged<ParserStateBox>.fromOpaque(context).takeUnretainedValue().state
            state.startElement(localname, attributeCount: Int(attributeCount), attributes)
        }
        handler.endElementNs = { context, _, _, _ in
            guard let context else { return }
            Unmanaged<ParserStateBox>.fromOpaque(context).takeUnretainedValue().state.depth -= 1
        }
        handler.serror = { context, _ in
            guard let context else { return }
            Unmanaged<ParserStateBox>.fromOpaque(context).takeUnretainedValue().state.counts.xmlErrors += 1
        }
        let box = ParserStateBox(state)
        let context = Unmanaged.passRetained(box)
        defer { context.release() }
        guard let parser = xmlCreatePushParserCtxt(&handler, context.toOpaque(), nil, 0, path) else {
            throw HealthExportError.notXML("libxml2 could not start")
        }
        defer { xmlFreeParserCtxt(parser) }
        // No entity substitution, no DTD loading, no network; recover from local damage.
        _ = xmlCtxtUseOptions(
            parser,
            Int32(
                XML_PARSE_RECOVER.rawValue | XML_PARSE_NONET.rawValue
                    | XML_PARSE_HUGE.rawValue | XML_PARSE_NOERROR.rawValue
                    | XML_PARSE_NOWARNING.rawValue))
        var buffer = [CChar](repeating: 0, count: 256 * 1024)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try input.read(into: $0) }
            state.counts.bytes += Int64(n)
            let rc = buffer.withUnsafeBufferPointer { xmlParseChunk(parser, $0.baseAddress, Int32(n), n == 0 ? 1 : 0) }
            if rc != 0, state.counts.records == 0, state.counts.bytes < 1 << 20 {
                throw HealthExportError.notXML("XML error \(rc) near the start of \(path)")
            }
            if !state.samples.isEmpty {
                let found = state.samples
                state.samples.removeAll(keepingCapacity: true)
                try await onSamples(found)
            }
            if n == 0 { break }
        }
    }

    private func openSource() throws -> ByteSource {
        guard let file = fopen(path, "rb") else { throw HealthExportError.cannotOpen(path) }
        var magic = [UInt8](repeating: 0, count: 4)
        let got = fread(&magic, 1, 4, file)
        if got == 4, magic == [0x50, 0x4B, 0x03, 0x04] {
            fclose(file)
            return try ZipEntrySource(path: path)
        }
        rewind(file)
        return FileSource(file: file)
    }
}

/// A byte stream: `read` fills the buffer, 0 at the end.
protocol ByteSource: AnyObject {
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

final class FileSource: ByteSource {
    private let file: UnsafeMutablePointer<FILE>
    init(file: UnsafeMutablePointer<FILE>) { self.file = file }
    deinit { fclose(file) }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        fread(buffer.baseAddress, 1, buffer.count, file)
    }
}

/// The `export.xml` entry of an `export.zip`, inflated by libarchive as it is read.
final class ZipEntrySource: ByteSource {
    private let archive: OpaquePointer

    init(path: String) throws {
        guard let a = archive_read_new() else { throw HealthExportError.archive("out of memory") }
        archive = a
        archive_read_support_format_zip(a)
        guard archive_read_open_filename(a, path, 1 << 16) == ARCHIVE_OK else {
            throw HealthExportError.archive(String(cString: archive_error_string(a)))
        }
        var entry: OpaquePointer?
        while archive_read_next_header(a, &entry) == ARCHIVE_OK {
            if let entry, let name = archive_entry_pathname(entry) {
                let text = String(cString: name)
                if text == "export.xml" || text.hasSuffix("/export.xml") { return }
            }
            archive_read_data_skip(a)
        }
        throw HealthExportError.noExportInArchive(path)
    }

    deinit { archive_read_free(archive) }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = archive_read_data(archive, buffer.baseAddress, buffer.count)
        guard n >= 0 else { throw HealthExportError.archive(String(cString: archive_error_string(archive))) }
        return n
    }
}

/// Keeps the reader's state reachable from the C callbacks.
final class ParserStateBox {
    let state: ParserState
    init(_ state: ParserState) { self.state = state }
}

/// Per-parse state; touched only by the callbacks, on the reading thread.
final class ParserState {
    var counts = HealthExportCounts()
    var samples: [HealthWaterSample] = []
    var includeOwn = false
    var depth = 0
    private let maxMillis = Int64(Date().addingTimeInterval(300).timeIntervalSince1970 * 1000)

    private static let water = Array("HKQuantityTypeIdentifierDietaryWater".utf8)

    func startElement(
        _ name: UnsafePointer<xmlChar>, attributeCount: Int,
        _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        depth += 1
        // Only records directly under <HealthData> (depth 2): a <Correlation>'s member
        // records repeat top-level ones and must not count twice.
        guard depth == 2, strcmp(name, "Record") == 0 else { return }
        counts.records += 1
        guard let attributes else { return }
        var type: UnsafeBufferPointer<UInt8>?
        var sourceName: UnsafeBufferPointer<UInt8>?
        var unit: UnsafeBufferPointer<UInt8>?
        var start: UnsafeBufferPointer<UInt8>?
        var end: UnsafeBufferPointer<UInt8>?
        var value: UnsafeBufferPointer<UInt8>?
        for i in 0..<attributeCount {
            guard let local = attributes[5 * i], let begin = attributes[5 * i + 3], let stop = attributes[5 * i + 4] else {
                continue
            }
            let bytes = UnsafeBufferPointer(start: begin, count: stop - begin)
            switch local[0] {
            case UInt8(ascii: "t") where strcmp(local, "type") == 0: type = bytes
            case UInt8(ascii: "s") where strcmp(local, "sourceName") == 0: sourceName = bytes
            case UInt8(ascii: "s") where strcmp(local, "startDate") == 0: start = bytes
            case UInt8(ascii: "u") where strcmp(local, "unit") == 0: unit = bytes
            case UInt8(ascii: "e") where strcmp(local, "endDate") == 0: end = bytes
            case UInt8(ascii: "v") where strcmp(local, "value") == 0: value = bytes
            default: break
            }
        }
        guard let type, type.elementsEqual(ParserState.water) else { return }
        counts.waterRecords += 1
        guard let sourceName, let unit, let start, let end, let value else {
            counts.malformed += 1
            return
        }
        let source = String(decoding: sourceName, as: UTF8.self)
        if !includeOwn, source == HealthExportReader.sourceNameOfSuplash {
            counts.skippedOwn += 1
            return
        }
        guard let startMillis = HealthDate.parse(start), HealthDate.parse(end) != nil,
            startMillis >= 946_684_800_000, startMillis <= maxMillis,
            let ml = HealthUnits.millilitres(value: value, unit: unit), (1...5000).contains(ml)
        else {
            counts.malformed += 1
            return
        }
        let key = HealthDedupe.key(sourceName: sourceName, startDate: start, endDate: end, value: value, unit: unit)
        samples.append(
            HealthWaterSample(
                sourceName: source, start: Date(timeIntervalSince1970: Double(startMillis) / 1000),
                amountMl: ml, dedupeKey: key))
    }
}

/// Apple's export timestamps: `2024-03-31 01:30:00 +0100` (local time and its offset).
enum HealthDate {
    static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard b.count == 25, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x20, b[13] == 0x3A, b[16] == 0x3A, b[19] == 0x20,
            b[20] == 0x2B || b[20] == 0x2D
        else { return nil }
        func num(_ from: Int, _ count: Int) -> Int64? {
            var n: Int64 = 0
            for i in from..<(from + count) {
                let d = b[i] &- 0x30
                guard d < 10 else { return nil }
                n = n * 10 + Int64(d)
            }
            return n
        }
        guard let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2),
            let s = num(17, 2), let oh = num(21, 2), let om = num(23, 2),
            (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61, oh < 24, om < 60
        else { return nil }
        let offset = (oh * 60 + om) * 60_000 * (b[20] == 0x2D ? -1 : 1)
        let days = daysFromCivil(y, mo, d)
        return days * 86_400_000 + h * 3_600_000 + mi * 60_000 + s * 1000 - offset
    }

    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

/// HealthKit volume units (as HKUnit writes them) to millilitres.
public enum HealthUnits {
    /// Millilitres per unit. US customary and imperial units as HealthKit defines them;
    /// a bare `cup` is the US cup.
    public static let millilitresPerUnit: [String: Double] = [
        "mL": 1, "ml": 1, "L": 1000, "l": 1000, "dL": 100, "cL": 10,
        "fl_oz_us": 29.5735295625, "fl_oz_imp": 28.4130625,
        "cup_us": 236.5882365, "cup": 236.5882365, "cup_imp": 284.130625,
        "pt_us": 473.176473, "pt_imp": 568.26125,
    ]

    static func millilitres(value: UnsafeBufferPointer<UInt8>, unit: UnsafeBufferPointer<UInt8>) -> Int? {
        guard value.count > 0, value.count < 32, let factor = millilitresPerUnit[String(decoding: unit, as: UTF8.self)] else {
            return nil
        }
        // strtod on a NUL-terminated copy; the whole text must be a finite number.
        var text = [CChar](repeating: 0, count: value.count + 1)
        for (i, byte) in value.enumerated() { text[i] = CChar(bitPattern: byte) }
        var endPointer: UnsafeMutablePointer<CChar>?
        let number = text.withUnsafeMutableBufferPointer { buffer -> Double? in
            guard let base = buffer.baseAddress else { return nil }
            let parsed = strtod(base, &endPointer)
            guard let endPointer, endPointer - base == value.count else { return nil }
            return parsed
        }
        guard let number, number.isFinite, number > 0 else { return nil }
        let ml = (number * factor).rounded(.toNearestOrAwayFromZero)
        guard ml < 1e9 else { return nil }
        return Int(ml)
    }
}

/// The stable dedupe key of an exported sample: exports carry no HealthKit UUIDs, so the
/// key is a name-based UUID (version 5, RFC 9562) of the fields that identify a sample.
public enum HealthDedupe {
    /// UUIDv5(URL namespace, "https://suplash.app/ns/apple-health-export").
    static let namespace: [UInt8] = uuidV5(
        namespace: [
            0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1,
            0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
        ],
        name: Array("https://suplash.app/ns/apple-health-export".utf8))

    /// The key of (sourceName, startDate, endDate, value, unit), each as written in the
    /// file, joined with U+001F (so no two field lists share a name).
    public static func key(sourceName: String, startDate: String, endDate: String, value: String, unit: String) -> String {
        let name = [sourceName, startDate, endDate, value, unit].joined(separator: "\u{1F}")
        return format(uuidV5(namespace: namespace, name: Array(name.utf8)))
    }

    static func key(
        sourceName: UnsafeBufferPointer<UInt8>, startDate: UnsafeBufferPointer<UInt8>,
        endDate: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>,
        unit: UnsafeBufferPointer<UInt8>
    ) -> String {
        var name: [UInt8] = []
        name.reserveCapacity(sourceName.count + startDate.count + endDate.count + value.count + unit.count + 4)
        for (i, part) in [sourceName, startDate, endDate, value, unit].enumerated() {
            if i > 0 { name.append(0x1F) }
            name.append(contentsOf: part)
        }
        return format(uuidV5(namespace: namespace, name: name))
    }

    static func uuidV5(namespace: [UInt8], name: [UInt8]) -> [UInt8] {
        var digest = Array(SHA1.hash(namespace + name).prefix(16))
        digest[6] = (digest[6] & 0x0F) | 0x50
        digest[8] = (digest[8] & 0x3F) | 0x80
        return digest
    }

    static func format(_ bytes: [UInt8]) -> String {
        let hex = hexString(bytes)
        let h = Array(hex.utf8)
        return String(decoding: h[0..<8], as: UTF8.self) + "-" + String(decoding: h[8..<12], as: UTF8.self) + "-"
            + String(decoding: h[12..<16], as: UTF8.self) + "-" + String(decoding: h[16..<20], as: UTF8.self) + "-"
            + String(decoding: h[20..<32], as: UTF8.self)
    }
}
