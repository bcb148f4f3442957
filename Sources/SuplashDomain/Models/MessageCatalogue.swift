import Foundation
import SuplashJSON

/// The texts of push alerts (spec §9: "text in the profile's locale (tr, en)"), one per key
/// and language. Each key allows a fixed set of `{placeholder}`s.
public enum MessageKey: String, Sendable, CaseIterable {
    case hydrationTitle = "hydration.title"
    /// Progress so far, the day's goal, the suggested amount.
    case hydrationBody = "hydration.body"
    /// The same with nothing logged yet today.
    case hydrationFirstBody = "hydration.firstBody"
    case billUpcomingTitle = "bill.upcoming.title"
    case billUpcomingBody = "bill.upcoming.body"
    case billTomorrowTitle = "bill.tomorrow.title"
    case billTomorrowBody = "bill.tomorrow.body"
    case billTodayTitle = "bill.today.title"
    case billTodayBody = "bill.today.body"
    /// The title of admin campaigns (their body is the campaign's own text).
    case campaignTitle = "campaign.title"

    /// The placeholders a text of this key may use: `progress`, `goal`, `suggested` (ml,
    /// grouped digits), `percent` (of the goal, with the locale's percent sign), `provider`
    /// (bill provider code), `amount` (money with currency), `days` (days to the due date).
    public var placeholders: Set<String> {
        switch self {
        case .hydrationTitle, .campaignTitle: []
        case .hydrationBody: ["progress", "goal", "suggested", "percent"]
        case .hydrationFirstBody: ["goal", "suggested"]
        case .billUpcomingTitle, .billTomorrowTitle, .billTodayTitle: ["provider"]
        case .billUpcomingBody: ["provider", "amount", "days"]
        case .billTomorrowBody, .billTodayBody: ["provider", "amount"]
        }
    }
}

/// The messages of one language, read from a catalogue file (`config/messages/<language>.json`):
/// `{"language": "tr", "numberLocale": "tr-TR", "messages": {"hydration.title": "…", …}}`.
public struct LocaleMessages: Sendable, Equatable {
    /// Lower-case language code (`tr`, `en`).
    public let language: String
    /// BCP 47 tag for numbers when the profile's locale is of another language (the
    /// language's usual region: `tr-TR`, `en-US`).
    public let numberLocale: String
    /// Every key's text.
    public let texts: [MessageKey: String]

    /// Reads one catalogue file.
    /// - Throws: `MessageCatalogue.FormatError` naming the field or key at fault: a missing
    ///   or unknown key, a placeholder the key does not allow, an unbalanced brace.
    public init(json: JSONValue) throws(MessageCatalogue.FormatError) {
        guard case .object = json else { throw MessageCatalogue.FormatError(description: "a message file must be a JSON object") }
        guard let language = json["language"]?.stringValue, (2...3).contains(language.utf8.count),
            language.utf8.allSatisfy({ (0x61...0x7A).contains($0) })
        else {
            throw MessageCatalogue.FormatError(description: "language must be a lower-case language code")
        }
        guard let numberLocale = json["numberLocale"]?.stringValue, ProfileValidation.languageTag(numberLocale) != nil else {
            throw MessageCatalogue.FormatError(description: "numberLocale must be a BCP 47 tag")
        }
        guard case .object(let members)? = json["messages"] else { throw MessageCatalogue.FormatError(description: "messages must be an object") }
        var texts: [MessageKey: String] = [:]
        for (name, value) in members {
            guard let key = MessageKey(rawValue: name) else { throw MessageCatalogue.FormatError(description: "unknown message key \(name)") }
            guard let text = value.stringValue, !text.isEmpty else {
                throw MessageCatalogue.FormatError(description: "message \(name) must be a non-empty string")
            }
            guard let used = MessageCatalogue.placeholders(in: text) else {
                throw MessageCatalogue.FormatError(description: "message \(name) has an unbalanced brace")
            }
            if let bad = used.first(where: { !key.placeholders.contains($0) }) {
                throw MessageCatalogue.FormatError(description: "message \(name) uses the placeholder {\(bad)}, not allowed there")
            }
            texts[key] = text
        }
        if let missing = MessageKey.allCases.first(where: { texts[$0] == nil }) {
            throw MessageCatalogue.FormatError(description: "message \(missing.rawValue) is missing")
        }
        self.language = language
        self.numberLocale = numberLocale
        self.texts = texts
    }
}

/// A rendered alert: `aps.alert` title and body.
public struct RenderedAlert: Sendable, Equatable {
    /// `aps.alert.title`.
    public var title: String
    /// `aps.alert.body`.
    public var body: String
    /// The catalogue language used.
    public var language: String

    /// An alert with its texts and the catalogue language they are in.
    public init(title: String, body: String, language: String) {
        self.title = title
        self.body = body
        self.language = language
    }
}

/// Every language's messages, and the renderer of reminder and campaign alerts (spec §9,
/// docs/reminders.md "Messages"). Pure: the executable reads the files.
public struct MessageCatalogue: Sendable {
    /// Errors reading the catalogue; messages name files' fields and keys, never texts.
    public struct FormatError: Error, Sendable, CustomStringConvertible {
        /// Names the file field or message key at fault, never a text.
        public var description: String
    }

    /// The language for profile locales the catalogue has no language for.
    public static let defaultLanguage = "en"

    /// Messages by language.
    public let languages: [String: LocaleMessages]

    /// - Throws: `FormatError` when a language appears twice or `defaultLanguage` is missing.
    public init(_ locales: [LocaleMessages]) throws(FormatError) {
        var languages: [String: LocaleMessages] = [:]
        for l in locales {
            guard languages[l.language] == nil else { throw FormatError(description: "language \(l.language) appears twice") }
            languages[l.language] = l
        }
        guard languages[Self.defaultLanguage] != nil else {
            throw FormatError(description: "the default language \(Self.defaultLanguage) is missing")
        }
        self.languages = languages
    }

    /// The catalogue language for a profile `locale`: its language subtag when the catalogue
    /// has it (`tr-TR` → `tr`, `en-GB` → `en`), else `defaultLanguage` (`de-DE` → `en`).
    public func language(for locale: String) -> String {
        let primary = locale.split(separator: "-", maxSplits: 1).first.map { $0.lowercased() } ?? ""
        return languages[primary] != nil ? primary : Self.defaultLanguage
    }

    /// A hydration reminder: progress so far, the day's goal, the suggested amount (ml).
    public func hydrationAlert(locale: String, loggedMl: Int, goalMl: Int, suggestedMl: Int) -> RenderedAlert {
        let (messages, numbers) = resolve(locale)
        let percent = goalMl > 0 ? min(999, max(0, loggedMl) * 100 / goalMl) : 0
        let values = [
            "progress": numbers.integer(loggedMl), "goal": numbers.integer(goalMl),
            "suggested": numbers.integer(suggestedMl), "percent": numbers.percent(percent),
        ]
        let body: MessageKey = loggedMl > 0 ? .hydrationBody : .hydrationFirstBody
        return render(messages, title: .hydrationTitle, body: body, values)
    }

    /// A bill-due reminder: `daysBeforeDue` 0 (today), 1 (tomorrow) or more; the amount in
    /// minor units of `currency` (ISO 4217), formatted in the profile's locale.
    public func billAlert(
        locale: String, provider: String, amountMinor: Int64, currency: String,
        daysBeforeDue: Int
    ) -> RenderedAlert {
        let (messages, numbers) = resolve(locale)
        let values = [
            "provider": provider, "amount": numbers.money(minor: amountMinor, currency: currency),
            "days": numbers.integer(daysBeforeDue),
        ]
        switch daysBeforeDue {
        case ...0: return render(messages, title: .billTodayTitle, body: .billTodayBody, values)
        case 1: return render(messages, title: .billTomorrowTitle, body: .billTomorrowBody, values)
        default: return render(messages, title: .billUpcomingTitle, body: .billUpcomingBody, values)
        }
    }

    /// An admin campaign: its text in the profile's catalogue language, else in
    /// `defaultLanguage`, else the first by language code; the title from the catalogue.
    /// - Parameter texts: the campaign's `texts` by language (`{tr, en}`).
    public func campaignAlert(locale: String, texts: [String: String]) -> RenderedAlert {
        let (messages, _) = resolve(locale)
        let body =
            texts[messages.language] ?? texts[Self.defaultLanguage]
            ?? texts.sorted(by: { $0.key < $1.key }).first?.value ?? ""
        return RenderedAlert(title: messages.texts[.campaignTitle] ?? "", body: body, language: messages.language)
    }

    /// The `{name}` placeholders of `text` in order, or nil when a brace is unbalanced or a
    /// name is not 1–32 ASCII letters.
    public static func placeholders(in text: String) -> [String]? {
        var names: [String] = []
        var current: [UInt8]?
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "{"):
                if current != nil { return nil }
                current = []
            case UInt8(ascii: "}"):
                guard let name = current, (1...32).contains(name.count) else { return nil }
                names.append(String(decoding: name, as: UTF8.self))
                current = nil
            default:
                if current != nil {
                    guard (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) else { return nil }
                    current?.append(c)
                }
            }
        }
        return current == nil ? names : nil
    }

    /// `text` with each `{name}` replaced by `values[name]` (unknown names are left as written).
    public static func substitute(_ text: String, _ values: [String: String]) -> String {
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            out += values[name] ?? String(rest[open...close])
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    private func resolve(_ locale: String) -> (LocaleMessages, LocaleNumbers) {
        let language = language(for: locale)
        // Both exist: `language(for:)` returns a known language and init checked the default.
        let messages = languages[language] ?? languages[Self.defaultLanguage] ?? languages.values.first
        guard let messages else { return (LocaleMessages.empty, LocaleNumbers(identifier: locale)) }
        let primary = locale.split(separator: "-", maxSplits: 1).first.map { $0.lowercased() }
        let numbers = LocaleNumbers(
            identifier: primary == language && ProfileValidation.languageTag(locale) != nil
                ? locale : messages.numberLocale)
        return (messages, numbers)
    }

    private func render(_ messages: LocaleMessages, title: MessageKey, body: MessageKey, _ values: [String: String]) -> RenderedAlert {
        RenderedAlert(
            title: Self.substitute(messages.texts[title] ?? "", values),
            body: Self.substitute(messages.texts[body] ?? "", values), language: messages.language)
    }
}

extension LocaleMessages {
    init(language: String, numberLocale: String, texts: [MessageKey: String]) {
        self.language = language
        self.numberLocale = numberLocale
        self.texts = texts
    }

    static let empty = LocaleMessages(language: MessageCatalogue.defaultLanguage, numberLocale: "en-US", texts: [:])
}

/// Locale-correct numbers for alert texts through Foundation's format styles (CLDR data):
/// grouping (`12.500` in tr, `12,500` in en), percent (`%60` in tr, `60%` in en), money
/// with the currency's ISO 4217 minor unit (`₺456,78`, `TRY 456.78`).
public struct LocaleNumbers: Sendable {
    let locale: Locale

    /// Numbers in the BCP 47 locale `identifier`.
    public init(identifier: String) { self.locale = Locale(identifier: identifier) }

    /// An integer with the locale's grouping.
    public func integer(_ value: Int) -> String { value.formatted(.number.locale(locale)) }

    /// A whole percentage (`60` → `60%` / `%60`).
    public func percent(_ value: Int) -> String { value.formatted(.percent.locale(locale)) }

    /// `minor` minor units of `currency` as money, e.g. 45678 TRY → `₺456,78` in tr-TR.
    public func money(minor: Int64, currency: String) -> String {
        let exponent = Self.minorUnitExponent(currency)
        var amount = Decimal(minor)
        for _ in 0..<exponent { amount /= 10 }
        return amount.formatted(.currency(code: currency).locale(locale))
    }

    /// ISO 4217 minor-unit exponent: 0 (JPY, KRW, …), 3 (BHD, KWD, …), 4 (CLF, UYW), else 2.
    public static func minorUnitExponent(_ currency: String) -> Int {
        switch currency {
        case "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF",
            "XOF", "XPF":
            0
        case "BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND": 3
        case "CLF", "UYW": 4
        default: 2
        }
    }
}
