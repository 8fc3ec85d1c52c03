import Foundation

/// How the names of transport options are compared: the one place that says which keys are
/// reserved for the core and which look like secrets, for every door options pass (the
/// configuration, catalogs, the options the CLI merges, the `FETCH` sent to helpers).
///
/// A helper may read its options without regard to case (`CA_FILE` for `ca_file`), or after
/// Unicode normalization (`ＣＡ_ＦＩＬＥ`, `ca_ﬁle`), or by upper-casing them (`prıvate_key` with
/// a dotless ı becomes `PRIVATE_KEY`). So names are compared after ``folded(_:)``: Unicode
/// compatibility normalization (NFKC), upper-casing, then case, width and diacritic folding, and
/// NFKC again.
package enum OptionKey {
    /// Keys filled by the core from the `[[credentials]]` entry covering the URL, folded.
    package static let reserved: Set<String> = ["ca_file", "known_hosts", "private_key", "user", "username"]
    /// Words that make a key name a secret, folded.
    package static let secretWords = ["password", "passphrase", "secret", "token"]

    /// `key` as it is compared.
    package static func folded(_ key: String) -> String {
        key.precomposedStringWithCompatibilityMapping
            .uppercased()
            .folding(options: [.caseInsensitive, .widthInsensitive, .diacriticInsensitive], locale: nil)
            .precomposedStringWithCompatibilityMapping
    }

    /// The reserved key `key` is a spelling of (`ca_file` for `CA_FILE`), if it is one.
    package static func reservedKey(_ key: String) -> String? {
        let folded = folded(key)
        return reserved.contains(folded) ? folded : nil
    }

    /// The secret word `key` contains after folding (`token` for `API_Token`), if it does.
    package static func secretWord(in key: String) -> String? {
        let folded = folded(key)
        return secretWords.first { folded.contains($0) }
    }

    /// `options` without the keys that spell a reserved key in another way (`CA_FILE`,
    /// `Known_Hosts`): only the core's own spelling, filled from `[[credentials]]`, reaches a
    /// transport. Options stored before this rule was kept at every door cannot pass either.
    package static func withoutLookAlikes(_ options: [String: String]) -> [String: String] {
        options.filter { key, _ in reservedKey(key).map { $0 == key } ?? true }
    }
}
