import Foundation
import SuplashHealthImport
import SuplashKit

enum Commands {
    static func log(_ arguments: inout Arguments, _ context: Context, _ output: Output) async throws {
        let at = arguments.option("--at")
        let sourceText = arguments.option("--source") ?? "api"
        let note = arguments.option("--note")
        guard let amountText = arguments.next() else { throw UsageError("log needs an amount in ml") }
        try arguments.finish()
        guard let amount = Int(amountText.lowercased().replacingOccurrences(of: "ml", with: "")),
            (1...5000).contains(amount)
        else { throw UsageError("the amount is whole millilitres, 1 to 5000") }
        guard let source = EntrySource(rawValue: sourceText) else {
            throw UsageError("--source is one of " + EntrySource.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let client = try context.client()
        let zone = (try? await client.profileTimeZone()) ?? .current
        let date = try at.map { try parseTime($0, zone: zone) } ?? Date()
        guard date.timeIntervalSinceNow < 300 else { throw UsageError("--at lies in the future") }
        let entry = try await client.logWater(amount, at: date, source: source, note: note)
        var synced = true
        do {
            _ = try await client.sync()
        } catch SuplashError.offline {
            synced = false
        }
        if let refused = try await client.rejectedMutations().last(where: { $0.documentID == entry.id }) {
            throw SuplashError.server(status: 422, code: refused.code, detail: refused.detail)
        }
        let pending = try await client.pendingCount()
        output.result(
            ["id": entry.id, "amountMl": amount, "loggedAt": iso(date), "synced": synced && pending == 0],
            human: "Logged \(amount) ml at \(localTime(date, zone)). "
                + (synced ? "Synced." : "Saved offline; `suplash sync` will send it."))
    }

    /// RFC 3339, or `HH:MM` today in `zone`.
    static func parseTime(_ text: String, zone: TimeZone) throws -> Date {
        let parts = text.split(separator: ":")
        if parts.count == 2, let h = Int(parts[0]), let m = Int(parts[1]), (0..<24).contains(h), (0..<60).contains(m) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            if let date = calendar.date(bySettingHour: h, minute: m, second: 0, of: Date()) { return date }
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        throw UsageError("--at takes RFC 3339 (2026-03-01T08:15:00+03:00) or HH:MM")
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func localTime(_ date: Date, _ zone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }

    static func today(_ context: Context, _ output: Output) async throws {
        let client = try context.client()
        do {
            _ = try await client.sync()
            let data = try await client.get("/v1/water_logs/me/summary")
            guard let s = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw SuplashError.invalidResponse("summary")
            }
            let total = (s["totalMl"] as? NSNumber)?.intValue ?? 0
            let goal = (s["goalMl"] as? NSNumber)?.intValue ?? 0
            let progress = (s["progress"] as? NSNumber)?.doubleValue ?? 0
            let streak = (s["currentStreakDays"] as? NSNumber)?.intValue ?? 0
            var human = "\(s["date"] as? String ?? "today"): \(total) / \(goal) ml (\(Int((progress * 100).rounded())) %)"
            human += (s["goalMet"] as? Bool ?? false) ? " — goal met" : ""
            human += ", streak \(streak) day\(streak == 1 ? "" : "s")"
            for e in (s["lastEntries"] as? [[String: Any]]) ?? [] {
                human += "\n  \(e["loggedAt"] as? String ?? "")  \((e["amountMl"] as? NSNumber)?.intValue ?? 0) ml  \(e["source"] as? String ?? "")"
            }
            output.raw(data, human: human)
        } catch SuplashError.offline {
            // Offline: today's total from the local store (unsent writes included).
            let zone = (try? await client.profileTimeZone()) ?? .current
            let entries = try await client.entries(on: Date(), in: zone)
            let total = entries.reduce(0) { $0 + $1.amountMl }
            output.result(
                ["totalMl": total, "entriesCount": entries.count, "offline": true],
                human: "Offline — local total today: \(total) ml in \(entries.count) entries.")
        }
    }

    static func history(days: Int, _ context: Context, _ output: Output) async throws {
        let client = try context.client()
        _ = try? await client.sync()
        let zone = (try? await client.profileTimeZone()) ?? .current
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd"
        let to = Date()
        let from = calendar.date(byAdding: .day, value: -(days - 1), to: to) ?? to
        let data = try await client.get(
            "/v1/water_logs/me/stats",
            query: [
                "from": formatter.string(from: from), "to": formatter.string(from: to),
                "interval": "day",
            ])
        guard let s = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let buckets = s["buckets"] as? [[String: Any]]
        else { throw SuplashError.invalidResponse("stats") }
        var human = "date        total ml   goal ml  entries"
        for b in buckets {
            let total = (b["totalMl"] as? NSNumber)?.intValue ?? 0
            let goal = (b["goalMl"] as? NSNumber)?.intValue ?? 0
            let count = (b["entriesCount"] as? NSNumber)?.intValue ?? 0
            let met = ((b["daysGoalMet"] as? NSNumber)?.intValue ?? 0) > 0 ? "  ✓" : ""
            human += "\n" + (b["start"] as? String ?? "") + pad(total, 11) + pad(goal, 10) + pad(count, 9) + met
        }
        output.raw(data, human: human)
    }

    static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: " ", count: max(0, width - s.count)) + s
    }

    static func bills(_ context: Context, _ output: Output) async throws {
        let client = try context.client()
        let data = try await client.get("/v1/invoices/me/bills", query: ["pageSize": "100"])
        guard let s = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let bills = s["bills"] as? [[String: Any]]
        else { throw SuplashError.invalidResponse("bills") }
        var human = bills.isEmpty ? "No bills." : "period   provider  subscriber        m³        amount  due         status"
        for b in bills {
            let minor = (b["amountMinor"] as? NSNumber)?.intValue ?? 0
            let amount = "\(minor / 100).\(String(format: "%02d", minor % 100)) \(b["currency"] as? String ?? "")"
            human +=
                "\n"
                + [
                    b["period"] as? String ?? "", (b["provider"] as? String ?? "").padding(toLength: 8, withPad: " ", startingAt: 0),
                    (b["subscriberNo"] as? String ?? "").padding(toLength: 16, withPad: " ", startingAt: 0),
                    "\((b["consumptionM3"] as? NSNumber)?.stringValue ?? "")".padding(toLength: 8, withPad: " ", startingAt: 0),
                    amount.padding(toLength: 14, withPad: " ", startingAt: 0), b["dueDate"] as? String ?? "",
                    b["status"] as? String ?? "",
                ].joined(separator: " ")
        }
        output.raw(data, human: human)
    }

    /// `import-health --dry-run`: reads and converts, uploads nothing (no sign-in needed).
    static func readHealth(file: String, includeOwn: Bool, _ output: Output) async throws {
        let started = Date()
        let reader = HealthExportReader(path: file, includeOwnRecords: includeOwn)
        var samples = 0
        var totalMl = 0
        try await reader.read { found in
            samples += found.count
            totalMl += found.reduce(0) { $0 + $1.amountMl }
        }
        let seconds = Date().timeIntervalSince(started)
        let c = reader.counts
        output.result(
            [
                "records": c.records, "waterRecords": c.waterRecords, "skippedSuplash": c.skippedOwn,
                "malformed": c.malformed, "xmlErrors": c.xmlErrors, "samples": samples, "totalMl": totalMl,
                "bytes": c.bytes, "seconds": (seconds * 1000).rounded() / 1000,
                "recordsPerSecond": seconds > 0 ? Int(Double(c.records) / seconds) : 0,
            ],
            human: """
                Read \(c.records) records (\(c.waterRecords) water, \(samples) to import, \(totalMl) ml) \
                in \(String(format: "%.1f", seconds)) s; skipped from Suplash \(c.skippedOwn), malformed \(c.malformed).
                """)
    }

    static func importHealth(file: String, includeOwn: Bool, _ context: Context, _ output: Output) async throws {
        let client = try context.client()
        let started = Date()
        let showBar = !output.json && isatty(2) == 1
        let report = try await HealthImporter.run(path: file, client: client, includeOwnRecords: includeOwn) { p in
            guard showBar else { return }
            let line =
                "\r\u{1B}[2Kread \(p.counts.records) records (\(p.counts.waterRecords) water, \(p.counts.bytes >> 20) MiB) · "
                + "uploaded \(p.uploaded) · duplicates \(p.duplicates)"
            FileHandle.standardError.write(Data(line.utf8))
        }
        if showBar { FileHandle.standardError.write(Data("\n".utf8)) }
        let seconds = Date().timeIntervalSince(started)
        let rejected = report.rejected.values.reduce(0, +)
        output.result(
            [
                "records": report.counts.records, "waterRecords": report.counts.waterRecords,
                "skippedSuplash": report.counts.skippedOwn, "malformed": report.counts.malformed,
                "xmlErrors": report.counts.xmlErrors, "uploaded": report.uploaded, "duplicates": report.duplicates,
                "rejected": rejected, "batches": report.batches, "seconds": (seconds * 1000).rounded() / 1000,
                "recordsPerSecond": seconds > 0 ? Int(Double(report.counts.records) / seconds) : 0,
            ],
            human: """
                Read \(report.counts.records) records (\(report.counts.waterRecords) water) in \(String(format: "%.1f", seconds)) s.
                Uploaded \(report.uploaded), duplicates \(report.duplicates), rejected \(rejected), \
                skipped from Suplash \(report.counts.skippedOwn), malformed \(report.counts.malformed).
                """)
    }
}
