import Foundation
import SuplashDomain
import SuplashJSON
import SuplashLogging

/// Loads the alert message catalogue (`*.json` in `reminders.messagesDir`, one file per
/// language; spec §9 "text in the profile's locale") at start, like `TariffFiles`.
enum MessageFiles {
    /// The configured folder, else `config/messages` under the working directory or under a
    /// parent of the executable.
    static func locate(_ configured: String) throws -> String {
        try ResourceLocator.locate(
            "config/messages", configured: configured, directory: true,
            configKey: "reminders.messagesDir")
    }

    /// Every language of the folder; a malformed file, a language twice or no `en` refuses
    /// start-up with a message naming the file and the key at fault.
    static func load(_ configured: String, logger: Logger) throws -> MessageCatalogue {
        let dir = try locate(configured)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".json") }.sorted()
        var locales: [LocaleMessages] = []
        for file in files {
            guard let data = FileManager.default.contents(atPath: dir + "/" + file) else {
                throw Settings.LoadError(description: "cannot read message file \(file)")
            }
            do {
                locales.append(try LocaleMessages(json: try JSONParser.parse(Array(data))))
            } catch let error as MessageCatalogue.FormatError {
                throw Settings.LoadError(description: "message file \(file): \(error.description)")
            } catch {
                throw Settings.LoadError(description: "message file \(file) is not valid JSON")
            }
        }
        do {
            let catalogue = try MessageCatalogue(locales)
            logger.info("messages_loaded", .count("languages", locales.count))
            return catalogue
        } catch {
            throw Settings.LoadError(description: "messages: \(error.description)")
        }
    }
}
