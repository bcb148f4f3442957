import Foundation
import XCTest

@testable import SuplashHealthImport
@testable import SuplashKit

final class HealthImportTests: XCTestCase {
    static var fixture: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/export.xml").path
    }

    /// Expected per local day in Europe/Berlin (DST starts 2024-03-31 02:00 → 03:00):
    /// 03-30: 250 mL + 0.5 L + 8 fl_oz_us (237; the Correlation's copy is not counted again)
    /// 03-31: 1 cup_us (237) + 200 + 300 (after the jump) + 1 cup (237) + 150 at 00:15 +0300 (= 23:15 CEST)
    /// 04-01: 12 fl_oz_us (355; its exact duplicate is deduplicated) + 1.25 L
    static let expected: [String: (total: Int, count: Int)] = [
        "2024-03-29": (0, 0), "2024-03-30": (987, 3), "2024-03-31": (1124, 5), "2024-04-01": (1605, 2), "2024-04-02": (0, 0),
    ]

    func testReaderCountsAndConverts() async throws {
        let reader = HealthExportReader(path: Self.fixture)
        var samples: [HealthWaterSample] = []
        try await reader.read { samples += $0 }
        let counts = reader.counts
        XCTAssertEqual(counts.records, 18)
        XCTAssertEqual(counts.waterRecords, 16)
        XCTAssertEqual(counts.skippedOwn, 1)
        XCTAssertEqual(counts.malformed, 4)  // "abc", unit g, 6 L (> 5000 ml), a short startDate
        XCTAssertEqual(counts.xmlErrors, 0)
        XCTAssertEqual(samples.count, 11)
        XCTAssertEqual(samples.map(\.amountMl), [250, 500, 237, 237, 200, 300, 237, 150, 355, 355, 1250])
        XCTAssertEqual(samples.first?.dedupeKey, "c08a0d17-adb0-55b8-9750-a51e3140b347")  // Python's uuid.uuid5
        XCTAssertEqual(samples[1].sourceName, "iPhone von Ayşe")
        XCTAssertEqual(samples[7].sourceName, "Ayşe's iPad")
        XCTAssertEqual(samples[7].start, Date(timeIntervalSince1970: Double(Timestamp.parse("2024-03-31T21:15:00Z") ?? 0) / 1000))
        XCTAssertEqual(samples[8].dedupeKey, samples[9].dedupeKey)
        let withOwn = HealthExportReader(path: Self.fixture, includeOwnRecords: true)
        var own = 0
        try await withOwn.read { own += $0.count }
        XCTAssertEqual(own, 12)
    }

    func testUnitsAndDedupeKey() {
        XCTAssertEqual(
            HealthDedupe.key(
                sourceName: "WaterMinder", startDate: "2024-03-30 08:00:00 +0100",
                endDate: "2024-03-30 08:00:00 +0100", value: "250", unit: "mL"),
            "c08a0d17-adb0-55b8-9750-a51e3140b347")
        func ml(_ value: String, _ unit: String) -> Int? {
            let v = Array(value.utf8)
            let u = Array(unit.utf8)
            return v.withUnsafeBufferPointer { vp in u.withUnsafeBufferPointer { up in HealthUnits.millilitres(value: vp, unit: up) } }
        }
        XCTAssertEqual(ml("1", "cup_imp"), 284)
        XCTAssertEqual(ml("16.9", "fl_oz_us"), 500)
        XCTAssertEqual(ml("0.33", "L"), 330)
        XCTAssertNil(ml("1e", "mL"))
        XCTAssertNil(ml("-5", "mL"))
        XCTAssertNil(ml("5", "kg"))
    }

    /// The fixture lands on the server with the exact totals per local day; a second import
    /// (and an import of the same export as a zip) adds nothing.
    func testImportExactTotalsPerLocalDayAndTwiceAddsNothing() async throws {
        let server = try KitTestServer()
        let client = try server.client("cli")
        try await client.signUp(email: testEmail(), password: testPassword)
        let token = try await client.currentAccessToken()
        let (patched, _, _) = try await server.request(
            "PATCH", "/v1/users/me", body: "{\"timezone\":\"Europe/Berlin\"}",
            token: token)
        XCTAssertEqual(patched, 200)

        let first = try await HealthImporter.run(path: Self.fixture, client: client)
        XCTAssertEqual(first.uploaded, 10)
        XCTAssertEqual(first.duplicates, 1)
        XCTAssertEqual(first.rejected, [:])
        try await assertDayTotals(client)

        let second = try await HealthImporter.run(path: Self.fixture, client: client)
        XCTAssertEqual(second.uploaded, 0)
        XCTAssertEqual(second.duplicates, 11)
        try await assertDayTotals(client)

        // The same export as the Health app ships it: export.zip with apple_health_export/.
        let zipDir = server.dataDir + "/zip"
        try FileManager.default.createDirectory(atPath: zipDir + "/apple_health_export", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: zipDir + "/apple_health_export/export.xml")
        try Data("<ClinicalDocument/>".utf8).write(to: URL(fileURLWithPath: zipDir + "/apple_health_export/export_cda.xml"))
        let zip = Process()
        zip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        zip.currentDirectoryURL = URL(fileURLWithPath: zipDir)
        zip.arguments = [
            "python3", "-c",
            """
            import zipfile
            with zipfile.ZipFile('export.zip', 'w', zipfile.ZIP_DEFLATED) as z:
                z.write('apple_health_export/export_cda.xml')
                z.write('apple_health_export/export.xml')
            """,
        ]
        try zip.run()
        zip.waitUntilExit()
        XCTAssertEqual(zip.terminationStatus, 0)
        let third = try await HealthImporter.run(path: zipDir + "/export.zip", client: client)
        XCTAssertEqual(third.counts.waterRecords, 16)
        XCTAssertEqual(third.uploaded, 0)
        XCTAssertEqual(third.duplicates, 11)
        try await assertDayTotals(client)
    }

    func assertDayTotals(_ client: SuplashClient, file: StaticString = #filePath, line: UInt = #line) async throws {
        let data = try await client.get("/v1/water_logs/me/stats", query: ["from": "2024-03-29", "to": "2024-04-02"])
        let buckets = (JSONRead.object(data)?["buckets"] as? [[String: Any]]) ?? []
        var got: [String: (Int, Int)] = [:]
        for b in buckets {
            got[JSONRead.string(b["start"]) ?? ""] = (JSONRead.int(b["totalMl"]) ?? -1, JSONRead.int(b["entriesCount"]) ?? -1)
        }
        XCTAssertEqual(got.count, Self.expected.count, file: file, line: line)
        for (day, want) in Self.expected {
            XCTAssertEqual(got[day]?.0, want.total, "total on \(day)", file: file, line: line)
            XCTAssertEqual(got[day]?.1, want.count, "entries on \(day)", file: file, line: line)
        }
    }

    func testNotAnExportFailsClearly() async throws {
        let path = NSTemporaryDirectory() + "not-xml-\(UUID().uuidString).xml"
        try Data("this is not xml".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = HealthExportReader(path: path)
        do {
            try await reader.read { _ in }
            XCTAssertEqual(reader.counts.records, 0)
        } catch is HealthExportError {}
        do {
            try await HealthExportReader(path: "/nonexistent/export.xml").read { _ in }
            XCTFail("missing file")
        } catch HealthExportError.cannotOpen {}
    }
}
