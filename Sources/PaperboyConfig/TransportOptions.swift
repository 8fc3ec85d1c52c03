import Paperboy

/// The rules for transport options (`options = { key = "value" }` on `[[issues.assets]]`, on
/// catalog assets and on `[[transports]]` entries): strings passed to the transport unchanged.
///
/// Options are settings, never secrets: they are stored in the library's database and sent to
/// helpers in every `FETCH`. Credentials belong in `[[credentials]]` and reach a transport only
/// by answering its challenges, so keys that name a secret are refused, and so are the keys the
/// core itself fills from `[[credentials]]` (a catalog must not be able to pick the CA file a
/// download is checked against).
public enum TransportOptions {
    /// The most options one table may hold.
    public static let maxCount = 64
    /// The longest key, in bytes.
    public static let maxKeyBytes = 64
    /// The longest value, in bytes of UTF-8.
    public static let maxValueBytes = 1024
    /// Keys filled by the core from the `[[credentials]]` entry covering the URL, in any letter
    /// case or Unicode spelling (``OptionKey``).
    public static let reservedKeys: Set<String> = OptionKey.reserved

    /// Why a table of `count` options is refused, if it is.
    static func countProblem(_ count: Int) -> String? {
        count > maxCount ? "\(count) options; at most \(maxCount) are allowed" : nil
    }

    /// Why the option `key` = `value` is refused, if it is.
    static func problem(key: String, value: String) -> String? {
        guard !key.isEmpty, key.utf8.count <= maxKeyBytes,
              key.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_.-".unicodeScalars.contains($0)) })
        else {
            return "an option key is 1 to \(maxKeyBytes) letters, digits, '_', '.' or '-', got \"\(TerminalText.escape(key))\""
        }
        if let reserved = OptionKey.reservedKey(key) {
            let spelled = reserved == key ? "" : " (spelled '\(reserved)' there)"
            return "'\(key)' is set by the core from [[credentials]]\(spelled); set it there"
        }
        if let word = OptionKey.secretWord(in: key) {
            return "options never hold secrets (they are stored and sent to the transport as they are); a \(word) goes in [[credentials]] and reaches the transport through a challenge"
        }
        if value.utf8.count > maxValueBytes {
            return "the value of '\(key)' has \(value.utf8.count) bytes; at most \(maxValueBytes) are allowed"
        }
        if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "the value of '\(key)' contains control characters"
        }
        return nil
    }
}
